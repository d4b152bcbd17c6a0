"""`veracity eval` on the embedded model: wall time by concurrency, and reuse across runs.

Run: python benchmarks/eval_runs.py [--data-dir DIR] [--method cot]
         [--dataset liar] [--limit 16] [--concurrency 1 2 4] [--repeats 2]

Every run is a fresh `veracity eval` process with the default model settings (threads,
slots) and its own new run directory. Printed, measured in this run:

1. wall time at each concurrency (examples checked at once), with the user-level cache
   off so every reply is generated; the runs are interleaved (1, 2, 4, 1, 2, 4, ...) so
   that changes in the machine's load fall on every setting alike; ratio to concurrency 1;
2. reuse across runs: the same eval into a new directory, with the user-level cache on
   (a fresh one for this benchmark): model calls made by the second run (goal 0), its
   wall and CPU time as a share of the first's (CPU time is less disturbed by the
   machine's other load), and whether its run directory recorded every reply it used.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from veracity.core.errors import ConfigError
from veracity.runtime.environment import data_dir


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def models_dir() -> str:
    home = Path(os.environ.get("VERACITY_HOME", Path.home() / ".cache" / "veracity"))
    return os.environ.get("VERACITY_MODELS_DIR") or str(home / "models")


def run_eval(a: argparse.Namespace, out: Path, env: dict[str, str], concurrency: int) -> dict:
    """One `veracity eval` process; its wall time and the run's usage totals."""
    cmd = [
        sys.executable, "-m", "veracity", "eval", "--method", a.method, "--dataset", a.dataset,
        "--limit", str(a.limit), "--concurrency", str(concurrency), "--out", str(out),
        "--data-dir", a.data_dir, "--no-progress",
    ]  # fmt: skip
    load = loadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"eval failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    usage = json.loads((out / "usage.json").read_text())
    totals = usage.get("totals", usage)
    with sqlite3.connect(out / "cache" / "llm.sqlite") as db:
        recorded = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "calls": totals["llm_calls"],
        "cached": totals["cached_llm_calls"],
        "recorded": recorded,
        "load": load,
    }


def by_concurrency(a: argparse.Namespace, tmp: Path) -> None:
    env = dict(os.environ, VERACITY_HOME=str(tmp / "home-c"), VERACITY_USER_CACHE="0")
    env["VERACITY_MODELS_DIR"] = models_dir()
    walls: dict[int, list[float]] = {c: [] for c in a.concurrency}
    for r in range(a.repeats):
        for c in a.concurrency:
            res = run_eval(a, tmp / f"c{c}-{r}", env, c)
            walls[c].append(res["wall_s"])
            print(
                f"   concurrency {c} run {r + 1}: {res['wall_s']:.1f} s, {res['calls']} calls "
                f"({res['cached']} cached) [load {res['load']}]",
                flush=True,
            )
    base = statistics.median(walls[a.concurrency[0]])
    for c in a.concurrency:
        med = statistics.median(walls[c])
        print(f"1. concurrency {c}: median {med:.1f} s = {med / base:.2f}x of concurrency "
              f"{a.concurrency[0]}")  # fmt: skip


def reuse(a: argparse.Namespace, tmp: Path) -> None:
    env = dict(os.environ, VERACITY_HOME=str(tmp / "home-r"), VERACITY_USER_CACHE="1")
    env["VERACITY_MODELS_DIR"] = models_dir()
    c = a.concurrency[-1]
    first = run_eval(a, tmp / "first", env, c)
    second = run_eval(a, tmp / "second", env, c)
    made = second["calls"] - second["cached"]
    print(
        f"2. same eval into a new directory: first {first['wall_s']:.1f} s "
        f"({first['calls'] - first['cached']} model calls) [load {first['load']}]; second "
        f"{second['wall_s']:.1f} s ({made} model calls, {second['cached']} of "
        f"{second['calls']} from the cache) [load {second['load']}] = "
        f"{100 * second['wall_s'] / first['wall_s']:.1f}% of the first's wall time, "
        f"{100 * second['cpu_s'] / first['cpu_s']:.1f}% of its CPU time "
        f"({second['cpu_s']:.1f} / {first['cpu_s']:.1f} s); its run directory "
        f"recorded {second['recorded']} replies (first: {first['recorded']})"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--data-dir",
        default=None,
        help="benchmark data (default: as the CLI, VERACITY_DATA_DIR "
        "or VERACITY_HOME/datasets; `veracity datasets get liar` fills it)",
    )
    p.add_argument("--method", default="cot")
    p.add_argument("--dataset", default="liar")
    p.add_argument("--limit", type=int, default=16)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--sections", default="12")
    a = p.parse_args()
    try:
        a.data_dir = str(data_dir(a.data_dir).resolve())
    except ConfigError as exc:
        raise SystemExit(str(exc)) from None
    print(f"{a.method} on {a.dataset} (first {a.limit}), {os.cpu_count()} CPU threads, "
          f"load average {loadavg()}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        if "1" in a.sections:
            by_concurrency(a, Path(tmp))
        if "2" in a.sections:
            reuse(a, Path(tmp))
    print(f"load average at the end {loadavg()}")


if __name__ == "__main__":
    main()
