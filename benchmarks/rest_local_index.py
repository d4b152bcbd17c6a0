"""REST check latency against a local index: N sequential ``rag`` checks on loopback.

Run: python benchmarks/rest_local_index.py [--checks 20] [--docs 2000] [--latency 0]

A fresh home folder gets a BM25 index (``bench``) of `--docs` synthetic documents; a
server in a child process (its own interpreter, on 127.0.0.1) offers method ``rag`` over
that index (``--source corpus=local:bench``) with the scripted model, which answers each
call after `--latency` seconds. One client then submits `--checks` claims one after the
other, each followed over its event stream to its end, and reads the job (it must be
``done``). A first check, not counted, warms the server (imports, the first run).

Prints: median and p95 of submit-to-finished and of the submit call alone, the index
size, errors, and the 1-minute load average before and after (``/proc/loadavg``).

To compare two versions, run it with each on ``PYTHONPATH`` (e.g. a ``git worktree`` of
the older commit: ``PYTHONPATH=/tmp/old/src python benchmarks/rest_local_index.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _server import wait_ready

RAG_REPLY = '{"cited": [1], "label": "false"}'
WORDS = [
    "river",
    "dam",
    "bridge",
    "vaccine",
    "protein",
    "cell",
    "climate",
    "carbon",
    "ocean",
    "forest",
    "city",
    "census",
    "budget",
    "election",
    "court",
    "tariff",
    "rail",
    "energy",
    "solar",
    "wind",
    "coal",
    "harvest",
    "drought",
    "flood",
    "virus",
    "trial",
    "school",
    "hospital",
    "museum",
    "satellite",
    "orbit",
    "comet",
    "glacier",
    "desert",
    "wheat",
    "copper",
    "steel",
    "bank",
]


def documents(n: int) -> list[object]:
    from veracity.core.types import Document

    rng = random.Random(7)
    return [
        Document(
            id=f"d{i}",
            title=f"Report {i}",
            text=" ".join(rng.choice(WORDS) for _ in range(120)) + f". Figure {i}.",
            source="bench",
        )
        for i in range(n)
    ]


def serve(port: int, latency: float, data_dir: str) -> None:
    """The child process: a server on 127.0.0.1:`port`, rag over local:bench."""
    from veracity.core.config import RunConfig
    from veracity.server import ServerSettings, create_app
    from veracity.server.runner import serve as run
    from veracity.testing import ScriptedLLM, ScriptedReply

    llm = ScriptedLLM(default=ScriptedReply(RAG_REPLY), latency_s=latency)
    settings = ServerSettings(data_dir=data_dir, workers=1, queue_size=8, rate_per_minute=0)
    cfg = RunConfig(method="rag", sources={"corpus": {"type": "local", "index": "bench"}})
    app = create_app(settings, run_config=cfg, llm=llm)
    run(app, "127.0.0.1", port, log_level="warning")


def one_check(http: httpx.Client, n: int) -> tuple[float, float, str]:
    """(submit seconds, submit-to-finished seconds, status) of one check."""
    body = {"input": {"kind": "claim", "text": f"The dam on river {n} holds copper and coal."}}
    t0 = time.perf_counter()
    resp = http.post("/v1/checks", json=body)
    submit = time.perf_counter() - t0
    if resp.status_code != 202:
        return submit, 0.0, f"HTTP {resp.status_code}: {resp.text[:200]}"
    job_id = resp.json()["id"]
    with http.stream("GET", f"/v1/checks/{job_id}/events") as stream:
        for line in stream.iter_lines():
            if line == "event: end":
                break
    finished = time.perf_counter() - t0
    status = http.get(f"/v1/checks/{job_id}?trace=false").json()["status"]
    return submit, finished, status


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checks", type=int, default=20)
    ap.add_argument("--docs", type=int, default=2000, help="documents in the index")
    ap.add_argument("--latency", type=float, default=0.0, help="seconds per model call")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.latency, args.data_dir)
        return
    home = tempfile.mkdtemp(prefix="veracity-rest-index-")
    os.environ["VERACITY_HOME"] = home
    os.environ["VERACITY_OFFLINE"] = "1"
    from veracity.retrieval.local.corpus import build_local_corpus

    corpus = build_local_corpus(
        "bench", documents(args.docs), mode="bm25", indexes_dir=Path(home) / "indexes"
    )
    chunks = corpus.load().manifest.chunks
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [
        sys.executable, __file__, "--serve", str(port), "--data-dir", str(Path(home) / "srv"),
        "--latency", str(args.latency),
    ]  # fmt: skip
    server = subprocess.Popen(cmd, env=dict(os.environ))
    base = f"http://127.0.0.1:{port}"
    submit_s, finish_s, errors = [], [], []
    try:
        wait_ready(base, "/readyz", seconds=60)
        load_before = loadavg()
        with httpx.Client(base_url=base, timeout=120) as http:
            one_check(http, -1)  # warm-up, not counted
            for n in range(args.checks):
                submit, finished, status = one_check(http, n)
                if status != "done":
                    errors.append(status)
                    continue
                submit_s.append(submit)
                finish_s.append(finished)
        load_after = loadavg()
    finally:
        server.terminate()
        server.wait(timeout=30)
    import veracity

    report = {
        "code": str(Path(veracity.__file__).parent),
        "checks": len(finish_s), "errors": len(errors), "docs": args.docs, "chunks": chunks,
        "latency_s": args.latency,
        "check_median_ms": round(statistics.median(finish_s) * 1000, 1) if finish_s else None,
        "check_p95_ms": ms(finish_s, 0.95) if finish_s else None,
        "submit_median_ms": round(statistics.median(submit_s) * 1000, 1) if submit_s else None,
        "submit_p95_ms": ms(submit_s, 0.95) if submit_s else None,
        "loadavg_before": load_before, "loadavg_after": load_after,
    }  # fmt: skip
    print(json.dumps(report, indent=2))
    if errors:
        print("first errors:", errors[:3], file=sys.stderr)


if __name__ == "__main__":
    main()
