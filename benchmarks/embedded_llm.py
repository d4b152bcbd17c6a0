"""The embedded model on this machine: load time, tokens/s, `veracity check` wall time, and
throughput beside other work.

Run: python benchmarks/embedded_llm.py [--model smollm2-135m] [--loads 3] [--repeats 3]
     python benchmarks/embedded_llm.py --sections 5 --sweep     # compare thread settings

Needs the model pulled (`veracity models pull`). Printed, all measured in this run:
1. load time of the GGUF into llama.cpp (a fresh `EmbeddedLLM` each time);
2. prompt processing and generation speed in tokens/s, as llama.cpp times them, for a
   short and a ~1,000-token prompt (128 generated tokens, temperature 0, the ignore-EOS
   option off: replies that stop early are counted as they are);
3. four requests at once against the same four one after another (aggregate tokens/s);
4. wall time of `veracity check "..." --json` in a fresh process with the LLM cache off
   (Python start-up, imports, model load and the check), and the check alone as the
   verdict's own usage reports it;
5. throughput beside another llama.cpp program and beside busy processes, as a ratio to
   the same batch alone, for the default settings (``--sweep``: for several thread,
   polling and slot settings). See `_contention.py`. The machine's load average is
   printed with every figure: on a shared machine "alone" means "beside whatever else
   was running", so compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _contention import Setting, loadavg, measure

from veracity.llm.base import LLMRequest, Message
from veracity.llm.embedded import DEFAULT_PARALLEL, DEFAULT_POLL, EmbeddedLLM, default_threads

SHORT = "Explain in a few sentences why the sky is blue."
LONG_DOC = " ".join(
    f"Paragraph {i}: the city council met on Tuesday to discuss the budget, the new tram "
    f"line and the school repairs, and agreed to publish the minutes next week."
    for i in range(30)
)
CLAIM = "The Eiffel Tower is in Berlin."


def request(prompt: str, max_tokens: int = 128) -> LLMRequest:
    return LLMRequest(
        messages=[Message(role="user", content=prompt)],
        temperature=0.0,
        max_tokens=max_tokens,
    )


def timed(llm: EmbeddedLLM, prompt: str) -> dict:
    body = llm.payload(request(prompt))
    body["cache_prompt"] = False  # time the whole prompt every time
    return llm._run(body)["timings"]


def speeds(llm: EmbeddedLLM, prompt: str, repeats: int) -> tuple[float, float, int, int]:
    runs = [timed(llm, f"({i}) {prompt}") for i in range(repeats)]
    return (
        statistics.median(r["prompt_per_second"] for r in runs),
        statistics.median(r["predicted_per_second"] for r in runs),
        runs[0]["prompt_n"],
        runs[0]["predicted_n"],
    )


async def concurrent(llm: EmbeddedLLM, n: int) -> tuple[float, float, int]:
    prompts = [f"{SHORT} Answer number {i}." for i in range(n)]
    t = time.perf_counter()
    for p in prompts:
        await llm.complete(request(p))
    serial = time.perf_counter() - t
    t = time.perf_counter()
    replies = await asyncio.gather(*(llm.complete(request(p + " ")) for p in prompts))
    together = time.perf_counter() - t
    tokens = sum(r.usage.completion_tokens for r in replies)
    return serial, together, tokens


def cli_check(repeats: int) -> tuple[list[float], list[float]]:
    env = dict(os.environ, VERACITY_CACHE_MODE="off")
    walls, inner = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "veracity", "check", CLAIM, "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        walls.append(time.perf_counter() - t)
        verdict = json.loads(out.stdout)
        inner.append(verdict["usage"]["wall_time_s"])
    return walls, inner


SWEEP = [
    Setting(threads=2, poll=50, parallel=4),  # llama.cpp's defaults; ours before measuring
    Setting(threads=2, poll=0, parallel=2),
    Setting(threads=1, poll=0, parallel=4),
    Setting(threads=1, poll=0, parallel=2),
    Setting(threads=1, poll=0, parallel=1),
]


def contention(a: argparse.Namespace) -> None:
    default = Setting(default_threads(), DEFAULT_POLL, DEFAULT_PARALLEL)
    settings = SWEEP if a.sweep else [default]
    path = str(EmbeddedLLM(a.model, auto_pull=False).ensure_model())
    print(
        f"5. generation over {a.window:.0f} s windows, {a.concurrency} request streams of "
        f"{a.max_tokens} tokens; slowdown = rate alone / rate beside the competitor "
        f"(default setting: {default.name})"
    )
    for setting in settings:
        for trial in range(a.trials):
            runs = {
                kind: measure(
                    setting,
                    kind,
                    model=a.model,
                    model_path=path,
                    window_s=a.window,
                    concurrency=a.concurrency,
                    max_tokens=a.max_tokens,
                )
                for kind in ("idle", "llama", "burner")
            }
            print("   " + _contention_row(setting, trial, runs), flush=True)


def _contention_row(setting: Setting, trial: int, runs: dict[str, dict]) -> str:
    idle = runs["idle"]["tps"]

    def show(kind: str) -> str:
        tps = runs[kind]["tps"]
        slower = f" = {idle / tps:.1f}x slower" if kind != "idle" and tps > 0 else ""
        if kind != "idle" and tps == 0:
            slower = " (no token in the window)"
        return f"{kind} {tps:.1f} tok/s{slower} [load {runs[kind]['load']}]"

    return f"{setting.name} #{trial + 1}: " + "; ".join(show(k) for k in runs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--loads", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--parallel", type=int, default=DEFAULT_PARALLEL)
    p.add_argument("--sections", default="12345", help="which sections to run, e.g. 5")
    p.add_argument("--sweep", action="store_true", help="section 5 for several settings")
    p.add_argument("--window", type=float, default=30.0, help="seconds per measurement")
    p.add_argument("--concurrency", type=int, default=4, help="request streams")
    p.add_argument("--max-tokens", type=int, default=48)
    p.add_argument("--trials", type=int, default=1)
    a = p.parse_args()
    print(f"model {a.model}, {os.cpu_count()} CPU threads, load average {loadavg()}")
    if "1" in a.sections:
        load_times(a)
    if "2" in a.sections or "3" in a.sections:
        speed_sections(a)
    if "4" in a.sections:
        walls, inner = cli_check(a.repeats)
        print(
            f"4. `veracity check` (direct, fresh process, cache off): wall median "
            f"{statistics.median(walls):.2f} s {[round(w, 2) for w in walls]}; the check "
            f"itself median {statistics.median(inner):.2f} s"
        )
    if "5" in a.sections:
        contention(a)
    print(f"load average at the end {loadavg()}")


def load_times(a: argparse.Namespace) -> None:
    loads = []
    for _ in range(a.loads):
        llm = EmbeddedLLM(a.model, auto_pull=False, n_parallel=a.parallel)
        llm.load()
        loads.append(llm.load_time_s)
        del llm
    print(f"1. load time: median {statistics.median(loads):.2f} s over {a.loads} loads {loads}")


def speed_sections(a: argparse.Namespace) -> None:
    llm = EmbeddedLLM(a.model, auto_pull=False, n_parallel=a.parallel)
    llm.load()
    timed(llm, SHORT)  # warm-up
    for name, prompt in (("short", SHORT), ("long", f"Summarise:\n{LONG_DOC}")):
        pp, tg, n_prompt, n_gen = speeds(llm, prompt, a.repeats)
        print(
            f"2. {name} prompt ({n_prompt} tokens, {n_gen} generated): "
            f"prompt {pp:.0f} tok/s, generation {tg:.0f} tok/s (median of {a.repeats})"
        )
    serial, together, tokens = asyncio.run(concurrent(llm, a.parallel))
    print(
        f"3. {a.parallel} requests: one after another {serial:.2f} s, at once {together:.2f} s "
        f"({serial / together:.2f}x; {tokens / together:.0f} generated tok/s at once)"
    )


if __name__ == "__main__":
    main()
