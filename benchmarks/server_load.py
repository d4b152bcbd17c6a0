"""Load on `veracity serve`: N concurrent clients for T seconds on loopback, against the
scripted model answering each call after a fixed latency.

Run: python benchmarks/server_load.py [--clients 50] [--seconds 60] [--latency 0.1]
         [--workers 8] [--queue 32]

The server runs in a child process (its own interpreter), the clients in this one. Each
client loops until the time is up: submit a claim (``direct`` method, one model call),
follow the job's event stream to its end, read the job; a 429 (queue full) makes it wait
the Retry-After it was given. Loops are bounded by time and by a request count.

Prints: checks completed, errors (anything but 202/429 on submit, a stream that did not
end, a job not ``done``), 429s, p50/p95 of the submit call and of submit-to-finished,
and the deepest the queue got (the server's own count) against its bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import httpx
from _server import wait_ready

MAX_REQUESTS_PER_CLIENT = 10_000


def serve(port: int, latency: float, workers: int, queue: int, data_dir: str) -> None:
    """The child process: a server on 127.0.0.1:`port` with a scripted model."""
    from veracity.core.config import RunConfig
    from veracity.server import ServerSettings, create_app
    from veracity.server.runner import serve as run
    from veracity.testing import ScriptedLLM

    llm = ScriptedLLM(default='{"label": "false"}', latency_s=latency)
    settings = ServerSettings(
        data_dir=data_dir, workers=workers, queue_size=queue, rate_per_minute=0
    )
    app = create_app(settings, run_config=RunConfig(method="direct"), llm=llm)
    run(app, "127.0.0.1", port, log_level="warning")


class Tally:
    def __init__(self) -> None:
        self.submit_s: list[float] = []
        self.finish_s: list[float] = []
        self.completed = 0
        self.refused = 0
        self.errors: list[str] = []


async def client(base: str, deadline: float, tally: Tally, n: int) -> None:
    body = {"input": {"kind": "claim", "text": f"Client {n} says the moon is made of cheese."}}
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for _ in range(MAX_REQUESTS_PER_CLIENT):
            if time.monotonic() >= deadline:
                return
            t0 = time.perf_counter()
            try:
                resp = await http.post("/v1/checks", json=body)
            except httpx.HTTPError as exc:
                tally.errors.append(f"submit: {type(exc).__name__}")
                continue
            tally.submit_s.append(time.perf_counter() - t0)
            if resp.status_code == 429:
                tally.refused += 1
                await asyncio.sleep(min(float(resp.headers.get("retry-after", "1")), 5.0))
                continue
            if resp.status_code != 202:
                tally.errors.append(f"submit: HTTP {resp.status_code}")
                continue
            job_id = resp.json()["id"]
            try:
                ended = False
                async with http.stream("GET", f"/v1/checks/{job_id}/events") as stream:
                    async for line in stream.aiter_lines():
                        if line == "event: end":
                            ended = True
                finished = time.perf_counter() - t0
                status = (await http.get(f"/v1/checks/{job_id}?trace=false")).json()["status"]
            except httpx.HTTPError as exc:
                tally.errors.append(f"follow: {type(exc).__name__}")
                continue
            if not ended or status != "done":
                tally.errors.append(f"job {job_id}: ended={ended} status={status}")
                continue
            tally.finish_s.append(finished)
            tally.completed += 1


def pct(values: list[float], q: float) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.0f} ms"


async def watch_queue(base: str, deadline: float, seen: list[int]) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        while time.monotonic() < deadline:
            ready = (await http.get("/readyz")).json()
            seen.append(ready["max_queued"])
            await asyncio.sleep(0.2)


async def drive(base: str, clients: int, seconds: float) -> tuple[Tally, list[int], float]:
    tally, seen = Tally(), []
    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(
        watch_queue(base, deadline, seen),
        *(client(base, deadline, tally, i) for i in range(clients)),
    )
    return tally, seen, time.monotonic() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--latency", type=float, default=0.1, help="seconds per model call")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--queue", type=int, default=32)
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.latency, args.workers, args.queue, args.data_dir)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp(prefix="veracity-load-")
    cmd = [
        sys.executable, __file__, "--serve", str(port), "--data-dir", data,
        "--latency", str(args.latency), "--workers", str(args.workers), "--queue", str(args.queue),
    ]  # fmt: skip
    env = {**os.environ, "VERACITY_HOME": data}
    server = subprocess.Popen(cmd, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, "/readyz", seconds=30)
        load = os.getloadavg()[0]
        tally, seen, wall = asyncio.run(drive(base, args.clients, args.seconds))
    finally:
        server.terminate()
        server.wait(timeout=30)
    report = {
        "clients": args.clients, "seconds": round(wall, 1), "latency_s": args.latency,
        "workers": args.workers, "queue_bound": args.queue,
        "checks_completed": tally.completed, "checks_per_s": round(tally.completed / wall, 1),
        "errors": len(tally.errors), "refused_429": tally.refused,
        "submit_p50": pct(tally.submit_s, 0.5), "submit_p95": pct(tally.submit_s, 0.95),
        "finish_p50": pct(tally.finish_s, 0.5), "finish_p95": pct(tally.finish_s, 0.95),
        "max_queued": max(seen, default=0), "loadavg_1m_at_start": round(load, 2),
    }  # fmt: skip
    print(json.dumps(report, indent=2))
    if tally.errors:
        print("first errors:", statistics.multimode(tally.errors)[:5], file=sys.stderr)


if __name__ == "__main__":
    main()
