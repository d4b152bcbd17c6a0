"""Sentence splitting and a server's liveness while long documents are checked (issue 38,
item 2).

Run: python benchmarks/text_split.py [--old-commit acbda6b] [--tree PATH] [--skip-old]
         [--flood-only] [--window 240]

1. **split**: the time to split 200,000 characters of short sentences with the rule
   splitter of this checkout, and with the one at ``--old-commit`` (read with
   ``git show`` into a temporary module) for 1k, 2k, 4k and 8k sentences. Each figure is
   the best of a few repeats (one for the old splitter's slow sizes).
2. **flood**: a server (a child process on 127.0.0.1, scripted model, ``direct`` method)
   gets ten documents of ~200,000 characters ("Rome is in Italy. " x 11,000,
   ``max_sentences: 1``, no model calls in extraction; one small document first, so the
   method's run is built) while ``/healthz`` is polled every 20 ms. Prints the probes'
   p50/p95/max latency (goal: p95 under 100 ms) beside the same probes of the idle
   server, probes that timed out (each counted as its 10 s timeout, so a p95 at 10 s
   means at least 5% of probes got no answer), each submission's time and when the last
   check ended. The server's code is this checkout's, or ``--tree``'s ``src`` (e.g. a
   ``git worktree`` of the old commit, to measure before). A flood still under way after
   ``--window`` seconds is cut there and says so.

Every section prints ``/proc/loadavg`` before and after it: on a shared machine the
timings are indicative only.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from _server import wait_ready

ROOT = Path(__file__).resolve().parents[1]
SHORT = [
    "Rome is in Italy.",
    "Dr. Lee saw it.",
    "Prices rose by 2.5 percent!",
    '"Why?" she asked.',
    "The U.S. Senate voted.",
    "It rained... Then it stopped.",
    "See Fig. 3 for details.",
    "J. Smith wrote it.",
]
DOCUMENT = "Rome is in Italy. " * 11_000  # 198,000 characters, the probe
PROBE_TIMEOUT_S = 10.0


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "n/a"


def short_sentences(n: int) -> str:
    return " ".join(SHORT[i % len(SHORT)] for i in range(n))


def old_module(commit: str):
    """The splitter module as it was at `commit`, loaded from ``git show``."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:src/veracity/nlp/text.py"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="old_text_"))
    path = folder / "old_text.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("old_text", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def best_of(fn, text: str, repeats: int) -> tuple[float, int]:
    times, found = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        found = len(fn(text))
        times.append(time.perf_counter() - started)
    return min(times), found


def split_section(commit: str, skip_old: bool) -> None:
    from veracity.nlp import text as new

    print(f"== split (loadavg {loadavg()})")
    text = short_sentences(100_000)[:200_000]
    seconds, found = best_of(new.sentence_spans, text, 5)
    print(f"200,000 characters of short sentences: {found:,} sentences in {seconds:.3f} s (new)")
    old = None if skip_old else old_module(commit)
    print(f"{'sentences':>9} {'chars':>8} {'new s':>8} {'old s':>8}  same spans")
    for n in (1000, 2000, 4000, 8000):
        text = short_sentences(n)
        new_s, _ = best_of(new.sentence_spans, text, 5)
        if old is None:
            print(f"{n:>9,} {len(text):>8,} {new_s:>8.4f} {'-':>8}")
            continue
        old_s, _ = best_of(old.sentence_spans, text, 1 if n >= 2000 else 2)
        same = old.sentence_spans(text) == new.sentence_spans(text)
        print(f"{n:>9,} {len(text):>8,} {new_s:>8.4f} {old_s:>8.2f}  {same}")
    print(f"   (loadavg after {loadavg()})")


# --------------------------------------------------------------------------- flood


def serve(port: int, src: str, data_dir: str) -> None:
    """The child process: a server on 127.0.0.1:`port` running the code under `src`."""
    sys.path.insert(0, src)
    from veracity.core.config import RunConfig
    from veracity.server import ServerSettings, create_app
    from veracity.server.runner import serve as run
    from veracity.testing import ScriptedLLM

    llm = ScriptedLLM(default='{"label": "true"}')
    settings = ServerSettings(data_dir=data_dir, rate_per_minute=0, queue_size=100)
    app = create_app(settings, run_config=RunConfig(method="direct"), llm=llm)
    run(app, "127.0.0.1", port, log_level="warning")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def flood_section(src: Path, window: float, documents: int = 10) -> None:
    print(f"== flood: server code {src} (loadavg {loadavg()})")
    port = free_port()
    data = tempfile.mkdtemp(prefix="text_split_server_")
    env = {**os.environ, "PYTHONPATH": str(src), "VERACITY_HOME": data, "VERACITY_OFFLINE": "1"}
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), "--tree-src", str(src), "--data", data],
        env=env,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, "/healthz", seconds=60)
        _flood(base, window, documents)
    finally:
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
    print(f"   (loadavg after {loadavg()})")


def _flood(base: str, window: float, documents: int) -> None:
    body = {
        "input": {"kind": "document", "text": DOCUMENT},
        "method": "direct",
        "extraction": {
            "max_sentences": 1, "decompose": False, "decontextualise": False,
            "checkworthiness": False,
        },
    }  # fmt: skip
    probes: list[float] = []
    timeouts = 0
    submits: list[float] = []
    ids: list[str] = []
    unanswered: list[float] = []  # submissions that got no answer before the window ended
    done = threading.Event()
    payload = json.dumps(body).encode()  # encoded once: the client's own work stays small
    headers = {"content-type": "application/json"}

    def submit_all() -> None:
        with httpx.Client(base_url=base, timeout=max(window - 5, 30)) as client:
            for _ in range(documents):
                if time.perf_counter() > deadline:
                    break
                t0 = time.perf_counter()
                try:
                    resp = client.post("/v1/checks", content=payload, headers=headers)
                except httpx.TimeoutException:
                    unanswered.append(time.perf_counter() - t0)
                    break
                submits.append(time.perf_counter() - t0)
                if resp.status_code == 202:
                    ids.append(resp.json()["id"])
                else:
                    print(f"   submission refused: {resp.status_code} {resp.text[:200]}")
        done.set()

    idle: list[float] = []
    with httpx.Client(base_url=base, timeout=PROBE_TIMEOUT_S) as probe:
        # one small document first, so the method's run is built before anything is timed
        warm = {**body, "input": {"kind": "document", "text": "Rome is in Italy."}}
        job_id = probe.post("/v1/checks", json=warm).json()["id"]
        for _ in range(300):
            if probe.get(f"/v1/checks/{job_id}").json()["status"] in ("done", "failed"):
                break
            time.sleep(0.1)
        for _ in range(40):  # the same probes with nothing submitted, for scale
            t0 = time.perf_counter()
            probe.get("/healthz")
            idle.append(time.perf_counter() - t0)
            time.sleep(0.05)
    print(
        f"/healthz idle (no checks), {len(idle)} probes: p50 {percentile(idle, 0.5) * 1000:.1f} "
        f"ms, p95 {percentile(idle, 0.95) * 1000:.1f} ms"
    )
    started = time.perf_counter()
    deadline = started + window
    poster = threading.Thread(target=submit_all, daemon=True)
    poster.start()
    finished_at: float | None = None
    statuses: dict[str, str] = {}
    with (
        httpx.Client(base_url=base, timeout=PROBE_TIMEOUT_S) as probe,
        httpx.Client(base_url=base, timeout=PROBE_TIMEOUT_S) as reader,
    ):
        last_status_read = 0.0
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            try:
                probe.get("/healthz")
                probes.append(time.perf_counter() - t0)
            except httpx.TimeoutException:
                probes.append(PROBE_TIMEOUT_S)
                timeouts += 1
            if done.is_set() and time.perf_counter() - last_status_read > 0.5:
                last_status_read = time.perf_counter()
                try:  # the history's summary columns: reading a 200 KB report would weigh
                    rows = reader.get("/v1/checks", params={"limit": 50}).json()["jobs"]
                    statuses.update({r["id"]: r["status"] for r in rows if r["id"] in ids})
                except httpx.TimeoutException:
                    pass
                if (
                    ids
                    and len(statuses) == len(ids)
                    and all(s in ("done", "failed") for s in statuses.values())
                ):
                    finished_at = time.perf_counter() - started
                    break
            time.sleep(0.02)
    cut = finished_at is None
    print(
        f"documents accepted: {len(submits)} of {documents} "
        f"({len(DOCUMENT):,} characters each, max_sentences 1)"
    )
    for waited in unanswered:
        print(f"a submission got no answer in {waited:.0f} s (the client gave up)")
    if submits:
        print(
            "submit time s: "
            + ", ".join(f"{s:.2f}" for s in submits)
            + f"  (p50 {statistics.median(submits):.3f})"
        )
    print(
        f"/healthz probes: {len(probes)}, timed out ({PROBE_TIMEOUT_S:.0f} s): {timeouts}; "
        f"p50 {percentile(probes, 0.5) * 1000:.1f} ms, p95 {percentile(probes, 0.95) * 1000:.1f} "
        f"ms, max {max(probes) * 1000:.1f} ms  (goal: p95 < 100 ms)"
    )
    counts = json.dumps({s: list(statuses.values()).count(s) for s in set(statuses.values())})
    if cut:
        print(f"CUT at the {window:.0f} s window: checks not all finished ({counts or 'none'})")
    else:
        print(f"all checks ended after {finished_at:.1f} s: {counts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old-commit", default="acbda6b")
    parser.add_argument("--tree", type=Path, default=ROOT, help="server code: TREE/src")
    parser.add_argument("--skip-old", action="store_true", help="no old-splitter timings")
    parser.add_argument("--flood-only", action="store_true")
    parser.add_argument("--split-only", action="store_true")
    parser.add_argument("--window", type=float, default=240.0, help="seconds the flood may run")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tree-src", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.tree_src, args.data)
        return
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, loadavg {loadavg()}")
    if not args.flood_only:
        split_section(args.old_commit, args.skip_old)
    if not args.split_only:
        flood_section((args.tree / "src").resolve(), args.window)


if __name__ == "__main__":
    main()
