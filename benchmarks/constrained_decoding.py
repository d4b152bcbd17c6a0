"""What constrained decoding costs per generated token on the embedded model, per reply schema.

Run: python benchmarks/constrained_decoding.py [--tokens 48] [--repeats 2] [--all]
     python benchmarks/constrained_decoding.py --modes plain,sent,gbnf,llguidance --only judges

For each reply schema (by default one of each reply model the debate methods send: the
deliberation package, RADAR, D2D, S2MAD, ZoFia, MERMAID and ToE; ``--all``: every distinct
reply schema of the package, as ``tests/unit/_reply_models.py`` finds them), the same prompt
is completed greedily on one llama.cpp thread and one slot in these modes:

- ``plain``: no schema, the end-of-text token ignored, so exactly ``--tokens`` tokens;
- ``sent``: the body veracity hands llama.cpp for a request with the schema
  (`EmbeddedLLM.server_body` of `EmbeddedLLM.payload`; run it with PYTHONPATH pointing at
  an older checkout for the "before" figure);
- ``gbnf``: the schema as ``response_format``, which llama.cpp turns into a GBNF grammar
  with its own converter;
- ``llguidance``: the schema as a ``%llguidance`` grammar (`xllamacpp.json_schema_to_grammar`),
  which llama.cpp hands to the llguidance library.

A constrained reply may end before ``--tokens`` (the grammar closes the object), so every
figure is per generated token, from llama.cpp's own timings (``predicted_per_token_ms``),
which count generation only and are steadier than wall time on a busy machine. ``setup``
is the rest of the wall time (wall - prompt - generation: turning the schema into a grammar
and building the sampler). Each mode's figure is the median over ``--repeats`` rounds; the
modes alternate within a round, so load changes hit them alike. Ratios are to ``plain`` on
the same schema's prompt. The load average is printed at the start and the end: compare
ratios within one run, not absolute times across runs. The CPU figure is the process's
CPU time per generated token past the first (see `marginal`): it leaves out the time spent
waiting for a core, so it is the steadier one on a busy machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import veracity
from veracity.core.config import DEFAULT_MODEL
from veracity.llm.base import LLMRequest, Message
from veracity.llm.embedded import EmbeddedLLM
from veracity.llm.structured import schema_for

DEBATE = (
    "deliberation.",
    "methods.radar.",
    "methods.d2d.",
    "methods.s2mad.",
    "methods.zofia.",
    "methods.mermaid.",
    "methods.toe.",
)
CLAIM = "The Eiffel Tower was moved to Berlin in 2019 by the French state."
MODES = ("plain", "sent", "gbnf", "llguidance")
# beside the first instance of each: the ReAct step with every tool (a wide anyOf) and
# S2MAD's stance batch for three claims
EXTRA = ("deliberation.react:fmt.model:1", "methods.s2mad.stance:_batch_model:1")


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def reply_schemas(every: bool, only: str | None) -> dict[str, dict[str, Any]]:
    """Reply schemas by id: the debate methods' (first instance per call site), or all."""
    tests = Path(veracity.__file__).resolve().parents[2] / "tests" / "unit"
    sys.path.insert(0, str(tests))
    from _reply_models import all_reply_models  # the package's registry of reply models

    seen: set[str] = set()
    out: dict[str, dict[str, Any]] = {}
    for key, model in sorted(all_reply_models().items()):
        if only and only not in key:
            continue
        first = key.startswith(DEBATE) and key.endswith(":0")
        if not every and not first and key not in EXTRA:
            continue
        schema = schema_for(model)
        text = json.dumps(schema, sort_keys=True)
        if text not in seen:
            seen.add(text)
            out[key] = schema
    return out


def prompt(schema: dict[str, Any]) -> list[Message]:
    fields = ", ".join(schema.get("properties", {})) or "the fields asked for"
    return [
        Message(
            role="user",
            content=(
                f"Claim: {CLAIM}\nCheck the claim and answer with one JSON object with the "
                f"fields {fields}. Explain your reasoning at length, in full sentences."
            ),
        )
    ]


def body(llm: EmbeddedLLM, mode: str, schema: dict[str, Any], tokens: int) -> dict[str, Any]:
    messages = prompt(schema)
    if mode == "plain":
        out = llm.payload(LLMRequest(messages=messages, temperature=0.0, max_tokens=tokens))
        return {**out, "ignore_eos": True}
    request = LLMRequest(messages=messages, temperature=0.0, max_tokens=tokens, json_schema=schema)
    out = llm.payload(request)
    if mode == "sent":  # what EmbeddedLLM hands llama.cpp (older versions: the payload)
        server_body = getattr(llm, "server_body", None)
        return server_body(out) if server_body else out
    out.pop("response_format", None)
    out.pop("grammar", None)
    if mode == "gbnf":
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": schema},
        }
    else:
        import xllamacpp

        out["grammar"] = xllamacpp.json_schema_to_grammar(json.dumps(schema))
    return out


def measure(server: Any, payload: dict[str, Any]) -> dict[str, float]:
    started, cpu = time.perf_counter(), time.process_time()
    reply = server.handle_chat_completions(payload)
    cpu_ms = (time.process_time() - cpu) * 1000
    wall_ms = (time.perf_counter() - started) * 1000
    if "error" in reply:
        raise RuntimeError(str(reply["error"])[:300])
    t = reply["timings"]
    n = t["predicted_n"]
    return {
        "n": n,
        "per_token": t["predicted_per_token_ms"],
        # CPU time of this process (llama.cpp's threads included) per generated token:
        # time spent waiting for a core is not in it, so it is the steadier figure when
        # the machine is busy (the prompt is cached, so nearly all of it is generation)
        "cpu_per_token": cpu_ms / max(n, 1),
        "setup": max(0.0, wall_ms - t["prompt_ms"] - t["predicted_ms"]),
    }


def marginal(server: Any, llm: EmbeddedLLM, mode: str, schema: dict, tokens: int) -> dict:
    """`measure` of a request, its CPU time per token counted past the first token: the
    CPU time of the same request cut to one token is taken off, so what every request
    costs once (the prompt's last token, building the sampler) does not weigh on short
    replies more than on long ones."""
    one = measure(server, body(llm, mode, schema, 1))
    full = measure(server, body(llm, mode, schema, tokens))
    if full["n"] > 1:
        spent = full["cpu_per_token"] * full["n"] - one["cpu_per_token"] * one["n"]
        full["cpu_per_token"] = max(0.0, spent) / (full["n"] - 1)
    return full


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--models-dir", type=Path, default=None)
    p.add_argument("--tokens", type=int, default=48, help="max_tokens of every request")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--modes", default="plain,sent", help=f"comma-separated, of {MODES}")
    p.add_argument("--all", action="store_true", help="every distinct reply schema")
    p.add_argument("--only", default=None, help="only schema ids containing this text")
    p.add_argument("--json", type=Path, default=None, help="also write the rows here")
    a = p.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    if "plain" not in modes or any(m not in MODES for m in modes):
        p.error(f"--modes must name plain and only {MODES}")
    if a.models_dir is None:
        from veracity.runtime.home import home_paths

        a.models_dir = home_paths().models
    llm = EmbeddedLLM(a.model, models_dir=a.models_dir, n_parallel=1, n_threads=a.threads)
    server = llm.load()
    schemas = reply_schemas(a.all, a.only)
    print(f"veracity from {Path(veracity.__file__).parent}")
    print(f"{llm.name}, {a.threads} thread(s), {a.tokens} tokens, {a.repeats} repeats")
    print(f"load average at the start: {loadavg()}")
    # one-off costs out of the way (llguidance builds its token tables on first use)
    first = next(iter(schemas.values()))
    for mode in modes:
        once = measure(server, body(llm, mode, first, 2))
        print(f"first {mode} request: setup {once['setup']:.0f} ms")
    rows = []
    shown = [m for m in modes if m != "plain"]
    head = f"{'schema':52} {'plain':>13} " + " ".join(f"{m:>24}" for m in shown)
    print("ms per generated token: llama.cpp's timing / process CPU time; ratio to plain")
    print(head + "\n" + "-" * len(head))
    for key, schema in schemas.items():
        runs: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
        for _ in range(a.repeats):
            for mode in shown:
                runs[mode].append(marginal(server, llm, mode, schema, a.tokens))
            # as many plain tokens as the first constrained mode wrote (at least 8)
            count = max(8, int(runs[shown[0]][-1]["n"])) if shown else a.tokens
            runs["plain"].append(marginal(server, llm, "plain", schema, count))
        row: dict[str, Any] = {"schema": key}
        for mode in modes:
            row[mode] = {k: statistics.median(r[k] for r in runs[mode]) for k in runs[mode][0]}
        base = row["plain"]
        for mode in modes:
            r = row[mode]
            r["ratio"] = r["per_token"] / base["per_token"]
            r["cpu_ratio"] = r["cpu_per_token"] / base["cpu_per_token"]
        cells = [f"{base['per_token']:5.1f}/{base['cpu_per_token']:5.1f}"]
        for mode in shown:
            r = row[mode]
            cells.append(
                f"{r['per_token']:5.1f}/{r['cpu_per_token']:5.1f} "
                f"{r['ratio']:4.2f}/{r['cpu_ratio']:4.2f}x n{r['n']:<3.0f}"
            )
        print(f"{key[:52]:52} {cells[0]:>13} " + " ".join(f"{c:>24}" for c in cells[1:]))
        sys.stdout.flush()
        rows.append(row)
    for mode in shown:
        for kind in ("ratio", "cpu_ratio"):
            ratios = [r[mode][kind] for r in rows]
            print(
                f"{mode} {kind.replace('ratio', 'per-token ratio')} to plain: median "
                f"{statistics.median(ratios):.2f}, max {max(ratios):.2f} "
                f"({max(rows, key=lambda r: r[mode][kind])['schema']})"
            )
        setups = [r[mode]["setup"] for r in rows]
        print(f"{mode} setup: median {statistics.median(setups):.0f} ms, max {max(setups):.0f} ms")
    print(f"load average at the end: {loadavg()}")
    if a.json:
        a.json.write_text(json.dumps({"load": loadavg(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
