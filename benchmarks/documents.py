"""Whole answers checked claim by claim, two pipelines in one run (issue 42, item 5).

For the first `--limit` answers of each document set, one claim method (default ``rag``
on the run's default model, the embedded one unless configured otherwise, with the
offline default evidence: the
``default`` local index in ``--indexes``, the same for both) checks each answer through:

- **old**: the source tree given with ``--old-src`` (a worktree of the commit before the
  change, e.g. ``git worktree add /tmp/wt_old 549b8cf``), through its own document road;
- **new**: this checkout's tree, through the document road as it is now.

Each pipeline runs in its own process with its own empty home folder (so no cache is
shared between them or with earlier runs; the models folder is shared read-only), answers
interleaved old/new so a change of load falls on both. Per answer it records model calls
(and the extraction stage's share), prompt and completion tokens, time to the first
claim verdict (the first ``ClaimChecked`` event with a verdict, from the start of the
check) and wall time. Prints one JSON line per answer and pipeline, then a table of
means per set; ``--out FILE`` keeps the rows.

``--model simulated`` puts a loopback OpenAI-compatible server in place of the model
(`_simulated_llm.py`): it extracts the same claims for both roads, as a competent model
would, and answers each request after the time the embedded model would take for it
(``--prefill-ms`` per prompt token, ``--decode-ms`` per completion token, ``--slots``
requests at once), so the roads' costs compare where the small model extracts nothing.

    VERACITY_HOME=/tmp/h veracity index build --dataset scifact --mode bm25
    VERACITY_DATA_DIR=PATH/TO/DATA python benchmarks/documents.py --old-src /tmp/wt_old/src \\
        --indexes /tmp/h/indexes --limit 20
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETS = ("factool_qa_documents", "factcheck_bench_documents")
HERE = Path(os.environ.get("VERACITY_NEW_SRC") or Path(__file__).resolve().parents[1] / "src")
# the simulated model's costs: the embedded SmolLM2-135M on this machine (2 cores, one
# llama.cpp thread, the default), medians of llama.cpp's own timings over 5 rounds of
# ~1000-token prompts (prefill: 15 prompts; decode: 10 replies of 31-64 tokens with the
# window extraction's and rag's reply schemas, constrained; plain decoding: 24.4 ms),
# load 2.6-3.0 (2026-12-06)
PREFILL_MS = 6.5
DECODE_MS = 25.7
EXTRACTION_TAG = "claims:"  # the document's extraction stage tags its calls claims:<step>


async def _check_one(service, example, method: str, extraction: dict) -> dict:
    """Check one answer in this process (old or new road, whichever the tree has)."""
    from veracity.core.context import observe

    question = (example.input.context or "").removeprefix("answer to the question: ").strip()
    first: list[float] = []
    calls: list[str] = []
    started = time.perf_counter()

    def seen(event) -> None:
        kind = type(event).__name__
        if kind == "ClaimChecked" and getattr(event, "label", None) is not None and not first:
            first.append(time.perf_counter() - started)
        if kind == "ModelCall" and not event.cached:
            calls.append(event.name)

    with observe(seen):
        report = await _road(service, example.input.text, question or None, method, extraction)
    wall = time.perf_counter() - started
    usage = report.usage
    return {
        "id": example.id,
        "claims": len(report.claims),
        "checked": sum(1 for c in report.claims if c.status == "checked"),
        "calls": usage.llm_calls - usage.cached_llm_calls,
        "extraction_calls": sum(1 for tag in calls if tag.startswith(EXTRACTION_TAG)),
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "first_verdict_s": round(first[0], 2) if first else None,
        "wall_s": round(wall, 2),
    }


async def _road(service, text: str, question: str | None, method: str, extraction: dict):
    """The document report, through whichever document road this tree has."""
    from veracity.documents import reading

    document = reading.from_text(text, question=question)
    if hasattr(service, "plan_document"):  # the old road: a document plan of its own
        plan = service.plan_document(document, method=method, extraction=extraction)
        return await plan.check()
    verdict = await service.check(document, method=method, extraction=extraction)  # one road
    return verdict.report


async def _worker(args: argparse.Namespace) -> None:
    from veracity.datasets import load_dataset
    from veracity.runtime.service import Veracity

    examples = list(load_dataset(args.set, data_dir=os.environ["VERACITY_DATA_DIR"]))
    service = Veracity()
    for line in sys.stdin:  # one answer index per line, so the parent interleaves
        index = int(line)
        row = await _check_one(service, examples[index], args.method, json.loads(args.extraction))
        print(json.dumps(row), flush=True)
    await service.aclose()


def _start(
    tree: Path,
    name: str,
    dataset: str,
    method: str,
    home: Path,
    indexes: Path,
    extraction: str,
    model_env: dict[str, str],
) -> subprocess.Popen:
    env = {**os.environ, **model_env}
    env["PYTHONPATH"] = str(tree)
    env["VERACITY_HOME"] = str(home / name)
    (home / name).mkdir(exist_ok=True)
    if not (home / name / "indexes").exists():
        (home / name / "indexes").symlink_to(indexes.resolve())
    models = Path(os.environ.get("VERACITY_HOME", Path.home() / ".cache/veracity")) / "models"
    env.setdefault("VERACITY_MODELS_DIR", str(models))
    command = [sys.executable, __file__, "--worker", "--set", dataset, "--method", method,
               "--extraction", extraction]  # fmt: skip
    return subprocess.Popen(
        command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )


def _mean(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.fmean(values), 2) if values else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old-src", type=Path, help="the old tree's src/ folder")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument(
        "--offset", type=int, default=0,
        help="the first answer's index (to split a long run across processes)",
    )  # fmt: skip
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--method", default="rag")
    ap.add_argument(
        "--indexes", type=Path, required=False,
        help="an indexes folder holding the 'default' local corpus both pipelines search "
        "(e.g. VERACITY_HOME=/tmp/h veracity index build --dataset scifact --mode bm25)",
    )  # fmt: skip
    ap.add_argument("--pipelines", default="old,new", help="which of old,new to run")
    ap.add_argument(
        "--extraction", default="{}",
        help='claim-extraction settings (JSON) for both pipelines, e.g. \'{"decompose": false}\'',
    )  # fmt: skip
    ap.add_argument(
        "--model", choices=("embedded", "simulated"), default="embedded",
        help="embedded: the run's default model; simulated: a loopback server that extracts "
        "and checks like a competent model at the embedded model's cost (_simulated_llm.py)",
    )  # fmt: skip
    ap.add_argument(
        "--prefill-ms", type=float, default=PREFILL_MS,
        help="simulated: ms per prompt token (measured on the embedded model, see PREFILL_MS)",
    )  # fmt: skip
    ap.add_argument(
        "--decode-ms", type=float, default=DECODE_MS,
        help="simulated: ms per completion token (see DECODE_MS)",
    )  # fmt: skip
    ap.add_argument("--slots", type=int, default=1, help="simulated: requests served at once")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--set", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        asyncio.run(_worker(args))
        return
    if "VERACITY_DATA_DIR" not in os.environ:
        sys.exit("set VERACITY_DATA_DIR to the folder that holds the document sets")
    if args.indexes is None or not (args.indexes / "default").is_dir():
        sys.exit("give --indexes: a folder with a 'default' index (see --help)")
    trees = {"new": HERE}
    if args.old_src is not None:
        trees = {"old": args.old_src.resolve(), **trees}
    trees = {k: v for k, v in trees.items() if k in args.pipelines.split(",")}
    if args.offset < 0 or args.limit < 1:
        sys.exit("--offset must be at least 0 and --limit at least 1")
    if args.slots < 1 or args.prefill_ms < 0 or args.decode_ms < 0:
        sys.exit("--slots must be at least 1 and --prefill-ms, --decode-ms not negative")
    with contextlib.ExitStack() as stack:
        model_env: dict[str, str] = {}
        if args.model == "simulated":
            from _simulated_llm import simulated_server

            server = stack.enter_context(
                simulated_server(args.prefill_ms / 1000, args.decode_ms / 1000, args.slots)
            )
            model_env = {"VERACITY_LLM": "openai", "VERACITY_BASE_URL": server.url,
                         "VERACITY_MODEL": "simulated-extractor"}  # fmt: skip
            print(
                f"simulated model at {server.url}: {args.prefill_ms} ms per prompt token, "
                f"{args.decode_ms} ms per completion token, {args.slots} slot(s)",
                flush=True,
            )
        rows = _run(args, trees, model_env)
        if args.model == "simulated":  # a retry would show as more requests than calls
            calls = sum(r["calls"] for r in rows)
            print(f"simulated model: {len(server.requests)} requests for {calls} calls counted; "
                  f"by reply schema: {server.responder.kinds}")  # fmt: skip


def _run(args: argparse.Namespace, trees: dict[str, Path], model_env: dict[str, str]) -> list[dict]:
    rows: list[dict] = []
    print(f"load at start: {Path('/proc/loadavg').read_text().split()[:3]}", flush=True)
    with tempfile.TemporaryDirectory(prefix="veracity-docbench-") as home:
        for dataset in args.sets.split(","):
            workers = {
                name: _start(
                    tree,
                    name,
                    dataset,
                    args.method,
                    Path(home),
                    args.indexes,
                    args.extraction,
                    model_env,
                )
                for name, tree in trees.items()
            }
            for index in range(args.offset, args.offset + args.limit):
                for name, proc in workers.items():
                    assert proc.stdin is not None and proc.stdout is not None
                    proc.stdin.write(f"{index}\n")
                    proc.stdin.flush()
                    line = proc.stdout.readline()
                    if not line:
                        sys.exit(f"the {name} worker stopped (see its error above)")
                    row = {"set": dataset, "pipeline": name, **json.loads(line)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            for proc in workers.values():
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait()
    print(f"load at end: {Path('/proc/loadavg').read_text().split()[:3]}")
    keys = ("calls", "extraction_calls", "prompt_tokens", "completion_tokens",
            "first_verdict_s", "wall_s", "claims")  # fmt: skip
    print("| set | pipeline | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 2) + "|")
    for dataset in args.sets.split(","):
        for name in trees:
            mine = [r for r in rows if r["set"] == dataset and r["pipeline"] == name]
            cells = " | ".join(str(_mean(mine, k)) for k in keys)
            print(f"| {dataset} | {name} | {cells} |")
    if args.out:
        args.out.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return rows


if __name__ == "__main__":
    main()
