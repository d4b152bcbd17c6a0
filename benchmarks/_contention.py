"""Embedded-model throughput beside other work, as a ratio to the same run without it.

Used by `embedded_llm.py` (section 5). Every measurement runs in a fresh process, so
llama.cpp's thread settings start clean; competitors are started by this module:

- ``llama``: another llama.cpp program as a user might run one, with llama.cpp's own
  defaults (threads = all cores, busy-wait polling on), generating without pause;
- ``burner``: busy processes (one per core), like a compile or a test run.

A configuration's figure is its generation rate alone (tokens per second over a fixed
window, from ``concurrency`` request streams of ``max_tokens`` each) divided by its rate
beside the competitor, measured back to back: how many times slower it runs.

Every process here starts its own session, as programs started from different terminals
do. Linux (with autogroup scheduling, the default on desktops and on this machine) then
shares the CPU between sessions first and between a session's threads second: beside
one busy session a process gets half the machine, beside the two burners a third. Fair
sharing predicts a ratio of about 2 beside the llama.cpp program and 3 beside the
burners (less for a setting that used one core of two when alone); far more means
threads stalled waiting for each other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROMPTS = [
    "Write a short story about a lighthouse keeper.",
    "Describe how bread is made, step by step.",
    "Explain why the sea is salty.",
    "List some uses of copper and say why.",
    "Tell me about the history of the bicycle.",
    "Describe a walk through a forest in autumn.",
    "Explain how a bill becomes a law.",
    "Write a letter to a friend about a trip.",
]


@dataclass(frozen=True)
class Setting:
    """An embedded-backend configuration under test."""

    threads: int
    poll: int
    parallel: int

    @property
    def name(self) -> str:
        return f"threads={self.threads} poll={self.poll} slots={self.parallel}"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def worker(setting: dict, model: str, window_s: float, concurrency: int, max_tokens: int) -> None:
    """Generate for `window_s` seconds from `concurrency` threads; print the tokens made.

    Requests go to the backend's llama.cpp server as `EmbeddedLLM` sends them (same
    parameters, streamed); every streamed token counts, so a very slow setting still
    gives a rate instead of running past a cap.
    """
    import threading

    from veracity.llm.base import LLMRequest, user
    from veracity.llm.embedded import EmbeddedLLM

    llm = EmbeddedLLM(
        model,
        auto_pull=False,
        n_threads=setting["threads"],
        poll=setting["poll"],
        n_parallel=setting["parallel"],
        n_ctx=2048,
    )
    server = llm.load()

    def body(i: int) -> dict:
        prompt = f"{PROMPTS[i % len(PROMPTS)]} (version {i})"
        req = LLMRequest(messages=[user(prompt)], max_tokens=max_tokens, temperature=0.0)
        return {**llm.payload(req), "stream": True}

    warm = {**body(10_000), "max_tokens": 2}
    server.handle_chat_completions(warm, lambda chunk: False)
    counts = [0] * concurrency
    deadline = time.monotonic() + window_s

    def loop(k: int) -> None:
        i = 0
        while time.monotonic() < deadline:

            def take(chunk: dict) -> bool:
                choices = chunk.get("choices") or [{}]
                if (choices[0].get("delta") or {}).get("content"):
                    counts[k] += 1
                return time.monotonic() >= deadline

            server.handle_chat_completions(body(k * 1000 + i), take)
            i += 1

    threads = [threading.Thread(target=loop, args=(k,)) for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"tokens": sum(counts), "window_s": window_s}), flush=True)


def compete_llama(model_path: str) -> None:
    """Generate forever with llama.cpp's defaults (another user's program)."""
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = model_path
    params.n_ctx = 1024
    params.n_parallel = 1
    params.cpuparams.n_threads = os.cpu_count() or 2  # llama.cpp's own default: all cores
    params.cpuparams_batch.n_threads = os.cpu_count() or 2
    params.verbosity = -1
    server = xlc.Server(params)
    print("ready", flush=True)
    body = {
        "messages": [{"role": "user", "content": "Write a very long story."}],
        "max_tokens": 256,
        "ignore_eos": True,
    }
    while True:
        server.handle_chat_completions(body)


def burn() -> None:
    print("ready", flush=True)
    while True:
        pass


class Competitor:
    """Background processes started for one measurement and stopped after it."""

    def __init__(self, kind: str, model_path: str):
        self.kind = kind
        self.model_path = model_path
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> Competitor:
        if self.kind == "llama":
            args = [["--compete-llama", self.model_path]]
        elif self.kind == "burner":
            args = [["--burn"]] * (os.cpu_count() or 2)
        else:
            args = []
        for extra in args:
            proc = subprocess.Popen(
                [sys.executable, __file__, *extra],
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,  # its own scheduling group, as another program's
            )
            self.procs.append(proc)
        for proc in self.procs:
            assert proc.stdout is not None
            proc.stdout.readline()  # "ready"
        if self.procs:
            time.sleep(1.0)  # let it reach its steady state
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


def measure(
    setting: Setting,
    kind: str,
    *,
    model: str,
    model_path: str,
    window_s: float,
    concurrency: int,
    max_tokens: int,
) -> dict:
    """Tokens per second of `setting` in a fresh process beside `kind` ("idle", "llama"
    or "burner"), with the load average when it started."""
    cmd = [
        sys.executable, __file__, "--worker", json.dumps(setting.__dict__), model,
        str(window_s), str(concurrency), str(max_tokens),
    ]  # fmt: skip
    with Competitor(kind, model_path):
        before = loadavg()
        try:
            out = subprocess.run(
                cmd, capture_output=True, text=True, timeout=window_s + 240, start_new_session=True
            )
        except subprocess.TimeoutExpired:  # not even loaded and warmed up in 4 minutes
            return {"tps": 0.0, "load": before}
    if out.returncode != 0:
        raise RuntimeError(f"benchmark worker failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return {"tps": result["tokens"] / result["window_s"], "load": before}


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        worker(json.loads(sys.argv[2]), sys.argv[3], float(sys.argv[4]), *map(int, sys.argv[5:7]))
    elif sys.argv[1] == "--compete-llama":
        compete_llama(sys.argv[2])
    elif sys.argv[1] == "--burn":
        burn()
