"""LLM-layer overhead and concurrency speed-up, measured with a fixed-latency fake backend.

Run: python benchmarks/llm_overhead.py [--latency 0.05] [--calls 200] [--concurrency 8]

Prints, all from one run:
- per-call overhead of ManagedLLM (accounting + trace) and of the SQLite cache (miss
  path: lookup + write; hit path: lookup only) over calling the backend directly;
- the speed-up of N concurrent calls over N sequential ones through ManagedLLM.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from veracity.core import context
from veracity.llm.base import Capabilities, LLMRequest, LLMResponse, TokenUsage, user
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM


class FixedLatencyLLM:
    capabilities = Capabilities(json_schema=True)
    backend_id = "fixed"

    def __init__(self, latency: float):
        self.latency = latency

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if self.latency:
            await asyncio.sleep(self.latency)
        return LLMResponse(text="ok", usage=TokenUsage(prompt_tokens=50, completion_tokens=5))


def _requests(n: int, temperature: float = 0.0) -> list[LLMRequest]:
    return [LLMRequest(messages=[user(f"question {i}")], temperature=temperature) for i in range(n)]


async def _per_call(llm, requests) -> float:
    started = time.perf_counter()
    for r in requests:
        await llm.complete(r)
    return (time.perf_counter() - started) / len(requests)


async def overhead(calls: int) -> None:
    raw = FixedLatencyLLM(0.0)
    with tempfile.TemporaryDirectory() as tmp, context.check_context():
        managed = ManagedLLM(raw)
        cache = ResponseCache(Path(tmp) / "c.sqlite")
        cached = ManagedLLM(raw, cache=cache)
        reqs = _requests(calls)
        t_raw = statistics.median([await _per_call(raw, reqs) for _ in range(3)])
        t_managed = statistics.median([await _per_call(managed, reqs) for _ in range(3)])
        t_miss = await _per_call(cached, reqs)  # first pass: lookups miss, rows written
        t_hit = await _per_call(cached, reqs)  # second pass: every lookup hits
    print(f"per call, zero-latency backend ({calls} calls):")
    print(f"  direct backend        {t_raw * 1e6:8.1f} µs")
    print(
        f"  ManagedLLM (no cache) {t_managed * 1e6:8.1f} µs  (+{(t_managed - t_raw) * 1e6:.1f} µs)"
    )
    print(f"  ManagedLLM cache miss {t_miss * 1e6:8.1f} µs  (+{(t_miss - t_raw) * 1e6:.1f} µs)")
    print(f"  ManagedLLM cache hit  {t_hit * 1e6:8.1f} µs")


async def speedup(latency: float, n: int) -> None:
    llm = ManagedLLM(FixedLatencyLLM(latency), max_concurrency=n)
    reqs = _requests(n, temperature=0.5)
    with context.check_context():
        started = time.perf_counter()
        for r in reqs:
            await llm.complete(r)
        sequential = time.perf_counter() - started
        started = time.perf_counter()
        await asyncio.gather(*(llm.complete(r) for r in reqs))
        concurrent = time.perf_counter() - started
    print(
        f"{n} calls of {latency * 1000:.0f} ms: sequential {sequential:.3f}s, "
        f"concurrent {concurrent:.3f}s, speed-up {sequential / concurrent:.1f}x "
        f"(ideal {n}x)"
    )
    print(
        f"layer overhead relative to backend latency: "
        f"{(concurrent - latency) / latency * 100:.1f}% on the concurrent batch"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(overhead(args.calls))
    asyncio.run(speedup(args.latency, args.concurrency))


if __name__ == "__main__":
    main()
