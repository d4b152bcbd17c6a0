"""Growth of `veracity serve`'s job database, and probes while the history is read.

Run: python benchmarks/server_growth.py [--jobs 40] [--kb 800] [--retention-mb 20]
         [--listers 2] [--seconds 10]

The server runs in a child process (its own interpreter) with the scripted model; this
process is the client. Three phases, on loopback:

1. `--jobs` posts of about `--kb` KB each (replies of 400 characters) are submitted to the
   ``direct`` method and followed to their end, with retention off
   (``VERACITY_SERVER_RETENTION_DAYS=0``, ``VERACITY_SERVER_RETENTION_MB=0``); the size
   of the database (``jobs.sqlite`` and its WAL) is printed.
2. `/healthz` is timed every 20 ms, first with nothing else running, then while
   `--listers` clients read ``GET /v1/checks?limit=200`` and ``/ui/history?limit=200``
   in a loop for `--seconds` seconds (bounded by a request count too).
3. The server is restarted on the same data directory with
   ``VERACITY_SERVER_RETENTION_MB=--retention-mb``; the size once the start's prune (in
   the background) is done, the jobs left, and how long that took are printed.

Prints JSON: the sizes, the /healthz latencies (p50, p95, max) idle and under the
listing load with their ratio, the listing requests done, and the 1-minute load average
of the machine at the start of each phase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

MAX_LIST_REQUESTS = 5_000


def serve(port: int, data_dir: str) -> None:
    """The child process: a server on 127.0.0.1:`port` with a scripted model."""
    from veracity.core.config import RunConfig
    from veracity.server import ServerSettings, create_app
    from veracity.server.runner import serve as run
    from veracity.testing import ScriptedLLM

    llm = ScriptedLLM(default='{"label": "false"}')
    settings = ServerSettings(data_dir=data_dir, rate_per_minute=0, queue_size=100)
    app = create_app(settings, run_config=RunConfig(method="direct"), llm=llm)
    run(app, "127.0.0.1", port, log_level="warning")


def post_body(n: int, kb: int) -> dict:
    replies = [
        {"id": f"r{i}", "text": f"reply {i} of post {n}: " + "it is true, I saw it. " * 17}
        for i in range(kb * 1000 // 420)
    ]
    text = f"Post {n}: the bridge closed today."
    return {"input": {"kind": "post", "text": text, "replies": replies}, "method": "direct"}


def db_bytes(data_dir: Path) -> int:
    return sum(p.stat().st_size for p in data_dir.glob("jobs.sqlite*") if p.is_file())


class Server:
    """The child server on a free port; started and stopped around a phase."""

    def __init__(self, data_dir: Path, env: dict[str, str]):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, __file__, "--serve", str(self.port), "--data-dir", str(data_dir)]
        full_env = {**os.environ, "VERACITY_HOME": str(data_dir), **env}
        started = time.perf_counter()
        self.proc = subprocess.Popen(cmd, env=full_env)
        for _ in range(600):
            try:
                if httpx.get(self.base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        else:
            self.stop()
            raise SystemExit("the server did not start")
        self.start_s = time.perf_counter() - started

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


async def fill(base: str, jobs: int, kb: int) -> int:
    """Submit `jobs` posts one after another; the number that ended ``done``."""
    done = 0
    async with httpx.AsyncClient(base_url=base, timeout=120) as http:
        for n in range(jobs):
            resp = await http.post("/v1/checks", json=post_body(n, kb))
            if resp.status_code != 202:
                raise SystemExit(f"submission {n}: HTTP {resp.status_code} {resp.text[:200]}")
            job_id = resp.json()["id"]
            async with http.stream("GET", f"/v1/checks/{job_id}/events") as stream:
                async for _ in stream.aiter_lines():
                    pass
            status = (await http.get(f"/v1/checks/{job_id}?trace=false")).json()["status"]
            done += status == "done"
    return done


async def probe(base: str, seconds: float) -> list[float]:
    """/healthz latencies (s), one request every 20 ms for `seconds`."""
    out: list[float] = []
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            await http.get("/healthz")
            out.append(time.perf_counter() - t0)
            await asyncio.sleep(0.02)
    return out


async def lister(base: str, seconds: float, count: list[int]) -> None:
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for i in range(MAX_LIST_REQUESTS):
            if time.monotonic() >= deadline:
                return
            path = "/v1/checks?limit=200" if i % 2 == 0 else "/ui/history?limit=200"
            resp = await http.get(path)
            if resp.status_code != 200:
                raise SystemExit(f"{path}: HTTP {resp.status_code}")
            count[0] += 1


async def under_load(base: str, listers: int, seconds: float) -> tuple[list[float], int]:
    count = [0]
    results = await asyncio.gather(
        probe(base, seconds), *(lister(base, seconds, count) for _ in range(listers))
    )
    return results[0], count[0]


def stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    pick = lambda q: round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)  # noqa: E731
    return {"n": len(ordered), "p50_ms": pick(0.5), "p95_ms": pick(0.95), "max_ms": pick(1.0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--kb", type=int, default=800, help="size of each submission")
    ap.add_argument("--retention-mb", type=float, default=20.0)
    ap.add_argument("--listers", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.data_dir)
        return
    data = Path(tempfile.mkdtemp(prefix="veracity-growth-"))
    report: dict = {"jobs": args.jobs, "kb_per_submission": args.kb}
    off = {"VERACITY_SERVER_RETENTION_DAYS": "0", "VERACITY_SERVER_RETENTION_MB": "0"}
    server = Server(data, off)
    try:
        report["load_1m_fill"] = round(os.getloadavg()[0], 2)
        report["done"] = asyncio.run(fill(server.base, args.jobs, args.kb))
        report["db_mb_no_retention"] = round(db_bytes(data) / 1e6, 1)
        report["load_1m_probe"] = round(os.getloadavg()[0], 2)
        report["healthz_idle"] = stats(asyncio.run(probe(server.base, 2.0)))
        lat, n = asyncio.run(under_load(server.base, args.listers, args.seconds))
        report["healthz_while_listing"] = stats(lat)
        report["listing_requests"] = n
        report["listing_requests_per_s"] = round(n / args.seconds, 1)
        idle, busy = report["healthz_idle"]["p50_ms"], report["healthz_while_listing"]["p95_ms"]
        report["healthz_p95_busy_over_p50_idle"] = round(busy / max(idle, 0.1), 1)
    finally:
        server.stop()
    report["load_1m_restart"] = round(os.getloadavg()[0], 2)
    server = Server(data, {"VERACITY_SERVER_RETENTION_MB": str(args.retention_mb)})
    try:
        started = time.perf_counter()  # the start's prune runs in the background
        while db_bytes(data) > args.retention_mb * 1.2e6 and time.perf_counter() - started < 60:
            time.sleep(0.1)
        pruned_s = time.perf_counter() - started
        jobs = httpx.get(server.base + "/v1/checks?limit=1000", timeout=60).json()["jobs"]
        report.update(
            retention_mb=args.retention_mb, start_s=round(server.start_s, 2),
            prune_s_after_start=round(pruned_s, 2),
            db_mb_after_retention=round(db_bytes(data) / 1e6, 1), jobs_kept=len(jobs),
        )  # fmt: skip
    finally:
        server.stop()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
