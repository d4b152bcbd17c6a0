"""The method guide's table: every registered method checks one fixed input, offline.

Run: python benchmarks/method_guide.py [--methods direct rag ...] [--timeout 900]
         [--out /tmp/method-guide] [--no-document] [--table]

Each method runs once as its own `veracity check --method NAME --json` process (niced,
one at a time, with a time limit) on the embedded default model, with the user-level LLM
cache off (every reply is generated) and ``VERACITY_OFFLINE=1``: retrieving methods
search the default local corpus, a BM25 index of SciFact's abstracts built into a fresh
home under --out (`veracity index build --dataset scifact --mode bm25`; the benchmark
data comes from VERACITY_DATA_DIR). The input is a claim, or a post with replies for
methods that take only posts; with --document (the default) a three-sentence document
is also checked with `--kind document` and the default document method.

Printed: a Markdown table, one row per method: inputs, what it searches, LLM calls,
prompt + completion tokens, searches, wall seconds and the load average (from
/proc/loadavg) before the run. Calls and tokens do not depend on the machine's load;
seconds do. A method that does not finish within --timeout gets no figures, only the
reason. Raw outputs (each run's JSON and standard error, results.jsonl) stay under
--out; --table prints the table again from results.jsonl without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLAIM = "Aspirin use reduces the risk of colorectal cancer."
POST = {
    "kind": "post",
    "id": "p1",
    "text": "Breaking: drinking hot water cures the flu in one day, doctors confirm.",
    "replies": [
        {"id": "r1", "text": "Source? No doctor says that."},
        {"id": "r2", "text": "It worked for my cousin, totally true."},
        {"id": "r3", "text": "This is a hoax, the flu lasts about a week."},
    ],
}
DOCUMENT = (
    "Marie Curie was born in Warsaw in 1867. She won two Nobel Prizes, in physics and in "
    "chemistry. The Eiffel Tower is in Berlin.\n"
)
# slower methods last, so that a time limit on the whole run costs the fewest rows
SLOW = ("d2d", "zofia", "s2mad", "mermaid_single", "mermaid", "toe", "radar_single", "radar")


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def models_dir() -> str:
    home = Path(os.environ.get("VERACITY_HOME", Path.home() / ".cache" / "veracity"))
    return os.environ.get("VERACITY_MODELS_DIR") or str(home / "models")


def environment(out: Path) -> dict[str, str]:
    env = dict(os.environ, VERACITY_HOME=str(out / "home"), VERACITY_USER_CACHE="0")
    env.update(VERACITY_OFFLINE="1", VERACITY_MODELS_DIR=models_dir(), NO_COLOR="1")
    return env


def build_index(env: dict[str, str]) -> None:
    """The default local corpus in the benchmark's own home (once)."""
    if (Path(env["VERACITY_HOME"]) / "indexes" / "default" / "manifest.json").is_file():
        return
    cmd = [sys.executable, "-m", "veracity", "index", "build", "--dataset", "scifact"]
    subprocess.run([*cmd, "--mode", "bm25"], env=env, check=True, capture_output=True)


def facts() -> dict[str, dict]:
    """What each registered method takes and searches, from the registry."""
    from veracity.core import registry
    from veracity.runtime.listing import list_methods

    rows = {}
    for row in list_methods():
        cls = registry.methods.get(row.name)
        needs = cls.source_needs({}) if hasattr(cls, "source_needs") else []
        rows[row.name] = {
            "inputs": list(row.input_kinds),
            "needs": [
                {"name": n.name, "kind": n.kind, "optional": n.off is not None} for n in needs
            ],
        }
    return rows


def run_one(name: str, kinds: list[str], out: Path, env: dict, timeout: float) -> dict:
    """One `veracity check` process for `name`; its usage and wall time, or why none."""
    cmd = [sys.executable, "-m", "veracity", "check", "--json"]
    if name == "document":
        doc = out / "document.txt"
        doc.write_text(DOCUMENT)
        cmd += ["--kind", "document", "--file", str(doc)]
        shown = "document (3 sentences)"
    elif "claim" in kinds:
        cmd += [CLAIM, "--method", name]
        shown = "claim"
    else:
        post = out / "post.json"
        post.write_text(json.dumps(POST))
        cmd += ["--file", str(post), "--method", name]
        shown = "post (3 replies)"
    record = {"method": name, "input": shown, "load_before": loadavg(), "timeout_s": timeout}
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: os.nice(15),
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        record["status"] = f"did not finish in {timeout:g} s"
    record["wall_s"] = round(time.perf_counter() - started, 1)
    record["load_after"] = loadavg()
    (out / f"{name}.json").write_text(stdout)
    (out / f"{name}.err").write_text(stderr)
    if "status" in record:
        return record
    if proc.returncode != 0:
        lines = [x for x in stderr.splitlines() if x.strip()]
        record["status"] = f"exit {proc.returncode}: {lines[-1] if lines else ''}"[:200]
        return record
    verdict = json.loads(stdout)
    usage = verdict.get("usage") or verdict.get("summary", {}).get("usage") or {}
    record.update(status="ok", usage=usage, label=verdict.get("label"))
    if name == "document":
        record["label"] = f"{len(verdict.get('claims', []))} claims"
    return record


def searches_cell(info: dict) -> str:
    """What the method searches with no sources given: web search (offline: the default
    index) and Wikipedia (left out offline)."""
    kinds = {"search": "web", "encyclopedia": "Wikipedia"}
    found = dict.fromkeys(kinds[n["kind"]] for n in info["needs"])
    return ", ".join(found) or "no"


def table(records: list[dict], info: dict[str, dict]) -> str:
    head = (
        "| method | input | searches | LLM calls | prompt + completion tokens | searches made "
        "| seconds | load (1/5/15 min) |\n| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"
    )
    lines = [head]
    for r in records:
        meta = info.get(r["method"], {"needs": [], "inputs": []})
        search = searches_cell(meta) if r["method"] != "document" else "as its method (rag)"
        if r.get("status") == "ok":
            u = r["usage"]
            tokens = f"{u.get('prompt_tokens', 0):,} + {u.get('completion_tokens', 0):,}"
            cells = [str(u.get("llm_calls", 0)), tokens, str(u.get("searches", 0)),
                     f"{r['wall_s']:.0f}"]  # fmt: skip
        else:
            cells = ["—", "—", "—", r.get("status", "not run")]
        row = [f"`{r['method']}`", r["input"], search, *cells, r["load_before"]]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def read_results(path: Path) -> list[dict]:
    latest: dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                latest[r["method"]] = r
    return list(latest.values())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--methods", nargs="*", help="these methods (default: every registered one)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per method")
    p.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "method-guide")
    p.add_argument("--no-document", action="store_true", help="skip the document check")
    p.add_argument("--table", action="store_true", help="print the table from --out only")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    results = a.out / "results.jsonl"
    info = facts()
    if not a.table:
        env = environment(a.out)
        build_index(env)
        names = a.methods or sorted(info, key=lambda n: (n in SLOW, SLOW.index(n) if n in SLOW
                                                         else 0, n))  # fmt: skip
        if not a.methods and not a.no_document:
            names.insert(names.index(SLOW[0]) if SLOW[0] in names else len(names), "document")
        for name in names:
            if name != "document" and name not in info:
                sys.exit(f"unknown method {name!r}; `veracity methods` lists them")
            kinds = info.get(name, {}).get("inputs", [])
            print(f"{name} …", file=sys.stderr, flush=True)
            record = run_one(name, kinds, a.out, env, a.timeout)
            with results.open("a") as f:
                f.write(json.dumps(record) + "\n")
            print(f"  {record['status']} in {record['wall_s']} s (load {record['load_before']})",
                  file=sys.stderr, flush=True)  # fmt: skip
    print(f"veracity check --json, embedded default model, offline (BM25 SciFact index); "
          f"claim: {CLAIM!r}")  # fmt: skip
    records = read_results(results)
    done = {r["method"] for r in records}
    for name in sorted(set(info) - done):  # every method has a row, measured or not
        records.append({"method": name, "input": "—", "load_before": "—", "status": "not run"})
    print(table(records, info))


if __name__ == "__main__":
    main()
