"""Process start-up of `veracity` commands: this checkout against a baseline, in one run.

Run: python benchmarks/startup.py [--baseline REF] [--repeats 7]

The baseline is a git ref of this repository (default ``HEAD~0`` of ``main``), unpacked
with ``git archive`` into a temporary folder and put first on ``sys.path``, so both run
with the same interpreter and packages. Each command runs `--repeats` times per tree,
the trees interleaved, and the median wall time and CPU time (user + system, which the
machine's other load disturbs less) are printed with their ratio. Commands:

- ``veracity --help``, ``veracity check --help``;
- ``veracity index search NAME QUERY`` on two small indexes built for the run: BM25
  only, and hybrid (the default mode, which also embeds the query);
- ``veracity check CLAIM`` whose reply is already in the user cache (asked once before
  the timing), so the model is never loaded: the process's own cost around a check;
- ``python -c "import veracity"`` for reference.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = 'veracity'; "
    "from veracity.cli import main; main()"
)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def unpack(ref: str, into: Path) -> Path:
    """The `src` folder of `ref`, unpacked into `into`."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def build_index(src: Path, env: dict[str, str], folder: Path) -> None:
    docs = folder / "docs"
    docs.mkdir()
    for i in range(40):
        (docs / f"d{i}.txt").write_text(
            f"Report {i}: the council approved the budget for the tram line and the "
            f"school repairs; vaccine trial {i} enrolled volunteers in the city.\n"
        )
    argv = [sys.executable, "-c", LAUNCH, str(src), "index", "build", str(docs)]
    for name, mode in (("bench", "bm25"), ("hybrid", "hybrid")):
        subprocess.run(
            [*argv, "--name", name, "--mode", mode], env=env, capture_output=True, check=True
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", default="main", help="git ref to compare with")
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "base").mkdir()
        trees = {"baseline": unpack(a.baseline, tmp_path / "base"), "this": ROOT / "src"}
        env = dict(os.environ, VERACITY_HOME=str(tmp_path / "home"), PYTHONDONTWRITEBYTECODE="")
        env.pop("VERACITY_LLM", None)
        env["VERACITY_MODELS_DIR"] = os.environ.get("VERACITY_MODELS_DIR") or str(
            Path.home() / ".cache" / "veracity" / "models"
        )
        build_index(trees["this"], env, tmp_path)
        check = ["check", "The Eiffel Tower is in Berlin.", "--method", "direct"]
        subprocess.run(  # the reply lands in the user cache; later checks read it
            [sys.executable, "-c", LAUNCH, str(trees["this"]), *check],
            env=env, capture_output=True, check=True,
        )  # fmt: skip
        commands = {
            "veracity --help": ["--help"],
            "veracity check --help": ["check", "--help"],
            "index search (bm25)": ["index", "search", "bench", "vaccine trial"],
            "index search (hybrid)": ["index", "search", "hybrid", "vaccine trial"],
            "check (cached reply)": check,
            "import veracity": None,
        }
        print(f"baseline {a.baseline} vs this checkout; {a.repeats} runs each, interleaved")
        print(f"load average at the start {loadavg()}")
        for name, args in commands.items():
            runs: dict[str, list[tuple[float, float]]] = {k: [] for k in trees}
            for _ in range(a.repeats + 1):  # the first round warms the bytecode caches
                for tree, src in trees.items():
                    if args is None:
                        code = f"import sys; sys.path.insert(0, {str(src)!r}); import veracity"
                        argv = [sys.executable, "-c", code]
                    else:
                        argv = [sys.executable, "-c", LAUNCH, str(src), *args]
                    runs[tree].append(timed(argv, env))
            med = {
                tree: (
                    statistics.median(w for w, _ in r[1:]),
                    statistics.median(c for _, c in r[1:]),
                )
                for tree, r in runs.items()
            }
            (bw, bc), (tw, tc) = med["baseline"], med["this"]
            print(
                f"{name:22} wall {bw:.3f} -> {tw:.3f} s ({tw / bw:.2f}x)   "
                f"cpu {bc:.3f} -> {tc:.3f} s ({tc / bc:.2f}x)   [load {loadavg()}]"
            )


if __name__ == "__main__":
    main()
