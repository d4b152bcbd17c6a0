"""MERMAID's tool start-up: time from a check's start to its first tool result.

Run: python benchmarks/mermaid_startup.py [--baseline-src /tmp/old/src] [--repeats 5]
     [--model-latency 0 1.0] [--docs 2000]

Each measurement is a fresh process (the tool server starts cold), with this checkout's
``src`` (and, given ``--baseline-src``, another tree's, e.g. a ``git worktree`` of an
older commit) first on ``sys.path``, the trees interleaved. The process builds a MERMAID
run over a local BM25 index of ``--docs`` synthetic documents (built once, in a temporary
VERACITY_HOME) with its evidence tools over stdio (the default) and a scripted model whose
every call takes ``--model-latency`` seconds, then checks one claim at once. Two checks
run, each in its own event loop (``asyncio.run``, as the synchronous Python API does):

- ``first``: the first check of the process, started right after the run was built;
- ``again``: a second check in a new event loop of the same process.

Printed per tree and model latency (medians over the repeats): the first tool result's
time from the check's start, the model time before it (the decomposer and the first
executor step), and what is left, the time the check spent waiting for its tools. The
load average (``/proc/loadavg``) is printed before and after: on a busy machine every
figure grows, so compare trees only within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import asyncio, json, sys, time
sys.path.insert(0, sys.argv[1])
latency = float(sys.argv[2])
from veracity.core.types import Claim
from veracity.runtime import build_run
try:  # a tree whose builders take only a spec
    from veracity.runtime import managed_sources, resolve_spec
    built_run = lambda flags, llm: build_run(resolve_spec(flags=flags), llm=llm)
except ImportError:  # an older tree: build_run takes the layered config
    try:
        from veracity.runtime import layered_config
    except ImportError:
        from veracity.runtime import resolve_config as layered_config
    built_run = lambda flags, llm: build_run(layered_config(flags=flags), llm=llm)
from veracity.testing import ScriptedLLM, ScriptedReply

decomposed = json.dumps({"triplets": [{"subject": "Eiffel Tower", "relation": "is in",
                                       "object": "Berlin"}], "topics": ["Geography"]})
search = {"name": "search_docs", "reason": "look", "input": {"query": "Eiffel Tower"}}
llm = ScriptedLLM()
llm.latency_s = latency
llm.on(".*", decomposed, tag="decomposer")
llm.on(".*", json.dumps({"thought": "I need evidence.", "action": search}), tag="executor:1")
llm.on(".*", ScriptedReply(json.dumps({"thought": "Paris.", "answer": "false"})),
       tag="executor:2")
flags = {"method": "mermaid", "sources": {"docs": {"type": "local", "index": "bench"}},
         "method_config": {"memory": "off"}}
started = time.perf_counter()
run = built_run(flags, llm)
built = time.perf_counter() - started

def measure():
    verdict = asyncio.run(run.check(Claim(text="The Eiffel Tower is in Berlin.")))
    assert verdict.error is None and verdict.label == "false", (verdict.error, verdict.label)
    tool = verdict.trace.of_kind("tool_call")[0]
    model = sum(e.data.get("latency_s") or 0.0 for e in verdict.trace.of_kind("llm_call")
                if e.t <= tool.t)
    return {"first_tool_s": tool.t, "model_s": model, "tool_call_s": tool.data["latency_s"]}

out = {"build_s": built, "first": measure(), "again": measure()}
close = getattr(run, "aclose", None)
if close is not None:
    asyncio.run(close())
print(json.dumps(out))
"""


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def build_index(home: Path, docs: int) -> None:
    """A local BM25 index named ``bench``: the Eiffel Tower page and `docs` fillers."""
    code = r"""
import sys
from veracity.core.types import Document
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime.home import home_paths
n = int(sys.argv[1])
docs = [Document(id="eiffel", title="Eiffel Tower",
                 text="The Eiffel Tower is a wrought-iron tower in Paris, France.")]
docs += [Document(id=f"d{i}", title=f"Town {i}",
                  text=f"Town {i} lies on river {i % 37} and has {i * 13 % 9000} people.")
         for i in range(n)]
build_local_corpus("bench", docs, mode="bm25", indexes_dir=home_paths().indexes)
"""
    env = {**os.environ, "VERACITY_HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    subprocess.run([sys.executable, "-c", code, str(docs)], env=env, check=True)


def one(src: Path, home: Path, latency: float) -> dict:
    env = {**os.environ, "VERACITY_HOME": str(home), "VERACITY_OFFLINE": "1"}
    env["VERACITY_CACHE_MODE"] = "off"  # every model call takes the scripted latency
    env["PYTHONPATH"] = str(src)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(src), str(latency)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode:
        raise SystemExit(f"{src}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline-src", type=Path, help="another tree's src folder")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model-latency", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--docs", type=int, default=2000)
    args = parser.parse_args()
    trees = {"this": ROOT / "src"}
    if args.baseline_src:
        trees = {"baseline": args.baseline_src.resolve(), **trees}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        build_index(home, args.docs)
        print(f"load average before: {loadavg()}  ({os.cpu_count()} CPUs)")
        for latency in args.model_latency:
            results: dict[str, list[dict]] = {name: [] for name in trees}
            for _ in range(args.repeats):
                for name, src in trees.items():
                    results[name].append(one(src, home, latency))
            print(f"\nmodel latency {latency:g} s per call, {args.repeats} processes per tree")
            print(f"{'tree':9} {'check':6} {'first tool':>11} {'model':>7} {'waited':>8}")
            for name, runs in results.items():
                for which in ("first", "again"):
                    first = statistics.median(r[which]["first_tool_s"] for r in runs)
                    model = statistics.median(r[which]["model_s"] for r in runs)
                    waited = statistics.median(
                        r[which]["first_tool_s"] - r[which]["model_s"] for r in runs
                    )
                    print(f"{name:9} {which:6} {first:10.2f}s {model:6.2f}s {waited:7.2f}s")
            print(f"load average: {loadavg()}")


if __name__ == "__main__":
    main()
