"""Batch throughput with a fake model of fixed latency: concurrency, engines, cache.

Run: python benchmarks/throughput.py [--latency 0.1] [--backend-limit 64] [--no-ray]

Every figure comes from `veracity.evaluation.batch.run_batch` (the code `veracity batch`
runs: run store appends, accounting, the method `direct`) over claims that name their
label, answered by `veracity.testing.echo.EchoBackend` after a fixed latency. Prints:

1. claims/s on one process (local engine) at concurrency 1, 8, 32, 128, against the
   ideal ``min(concurrency, backend limit) / latency`` (the goal: at least 0.9 of it);
2. the local engine against Ray on a local cluster with 1 and 2 workers (same
   concurrency per worker; worker start-up, where each builds the run, included);
3. the same batch again from the LLM cache: live LLM calls, live searches, and its wall
   time as a share of the first run's (the goal: under 5%).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from veracity import runtime
from veracity.datasets.generic import ColumnSpec
from veracity.evaluation.batch import BatchSummary, Rows, prepare_batch, read_rows, run_batch
from veracity.testing.echo import EchoBackend

COLUMNS = ColumnSpec(text="claim", id="cid")


def write_claims(path: Path, n: int) -> Path:
    rows = [{"cid": f"c{i}", "claim": f"claim {i} say:{'SUPPORTED' if i % 2 else 'REFUTED'}"}
            for i in range(n)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def one_batch(
    claims: Path,
    run_dir: Path,
    latency: float,
    concurrency: int,
    limit: int,
    *,
    cache: bool = False,
    engine=None,
) -> tuple[float, BatchSummary]:
    """Wall time and summary of one batch (building the driver's run is not timed).

    The driver's model is the fake one behind `limit` live calls (``llm.max_concurrency``),
    its replies cached in the run directory when `cache`; Ray workers build their own.
    """
    from veracity.llm.cache import ResponseCache
    from veracity.llm.client import ManagedLLM

    mode = "record" if cache else "off"
    flags = {"method": "direct", "labels": "supported_refuted",
             "llm": {"cache_mode": mode, "max_concurrency": limit}}  # fmt: skip
    run_dir.mkdir(parents=True, exist_ok=True)
    store = ResponseCache(run_dir / "cache" / "llm.sqlite", mode=mode) if cache else None
    llm = ManagedLLM(EchoBackend(latency)(), cache=store, max_concurrency=limit)
    batch = prepare_batch(runtime.layered_config(flags=flags), COLUMNS, run_dir, llm=llm)
    jobs = Rows(read_rows(claims, COLUMNS), COLUMNS)
    started = time.perf_counter()
    summary = asyncio.run(run_batch(batch, iter(jobs), concurrency=concurrency, engine=engine))
    return time.perf_counter() - started, summary


def sweep(root: Path, latency: float, limit: int, levels: list[int]) -> list[dict]:
    rows = []
    for c in levels:
        n = max(50, 8 * c)
        wall, s = one_batch(write_claims(root / f"c{c}.jsonl", n), root / f"sweep-{c}",
                            latency, c, limit)  # fmt: skip
        ideal = min(c, limit) / latency
        rate = n / wall
        rows.append({"concurrency": c, "claims": n, "claims_per_s": rate, "ideal": ideal,
                     "ratio": rate / ideal, "ok": s.statuses["ok"]})  # fmt: skip
    return rows


def engines(root: Path, latency: float, limit: int, concurrency: int, n: int) -> list[dict]:
    import ray

    from veracity.evaluation.ray_engine import RayEngine, RayOptions

    claims = write_claims(root / "engines.jsonl", n)
    rows = []
    wall, s = one_batch(claims, root / "local", latency, concurrency, limit)
    rows.append(
        {"engine": "local", "claims_per_s": n / wall, "wall_s": wall, "ok": s.statuses["ok"]}
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        for workers in (1, 2):
            engine = RayEngine(RayOptions(workers=workers), backend=EchoBackend(latency))
            wall, s = one_batch(claims, root / f"ray{workers}", latency, concurrency, limit,
                                engine=engine)  # fmt: skip
            rows.append({"engine": f"ray, {workers} worker(s)", "claims_per_s": n / wall,
                         "wall_s": wall, "startup_s": engine.startup_s,
                         "after_startup_per_s": n / (wall - engine.startup_s),
                         "ok": s.statuses["ok"]})  # fmt: skip
    finally:
        ray.shutdown()
    return rows


def from_cache(root: Path, latency: float, limit: int, concurrency: int, n: int) -> dict:
    """A batch, then the same batch again (its results dropped) from the LLM cache."""
    from veracity.evaluation.store import RunStore

    claims = write_claims(root / "cache.jsonl", n)
    first, s1 = one_batch(claims, root / "cached", latency, concurrency, limit, cache=True)
    RunStore(root / "cached").rewrite_predictions([])  # check every row again
    second, s2 = one_batch(claims, root / "cached", latency, concurrency, limit, cache=True)
    return {
        "claims": n,
        "first_wall_s": first,
        "first_live_llm_calls": s1.llm_calls - s1.cached_llm_calls,
        "repeat_wall_s": second,
        "repeat_live_llm_calls": s2.llm_calls - s2.cached_llm_calls,
        "repeat_searches": s2.searches,
        "repeat_share": second / first,
        "ok": s2.statuses["ok"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per LLM call")
    parser.add_argument("--backend-limit", type=int, default=64, help="llm.max_concurrency")
    parser.add_argument("--levels", default="1,8,32,128", help="concurrency levels")
    parser.add_argument("--engine-claims", type=int, default=320)
    parser.add_argument("--engine-concurrency", type=int, default=8)
    parser.add_argument("--cache-claims", type=int, default=200)
    parser.add_argument("--cache-concurrency", type=int, default=1)
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray comparison")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    lat, limit = args.latency, args.backend_limit
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        result: dict = {"latency_s": lat, "backend_limit": limit}
        result["sweep"] = sweep(root, lat, limit, [int(x) for x in args.levels.split(",")])
        print(f"one process, latency {lat * 1000:.0f} ms, backend limit {limit}")
        print(f"{'concurrency':>11} {'claims':>6} {'claims/s':>9} {'ideal':>7} {'ratio':>6}")
        for r in result["sweep"]:
            print(f"{r['concurrency']:>11} {r['claims']:>6} {r['claims_per_s']:>9.1f} "
                  f"{r['ideal']:>7.1f} {r['ratio']:>6.2f}")  # fmt: skip
        if not args.no_ray:
            result["engines"] = engines(root, lat, limit, args.engine_concurrency,
                                        args.engine_claims)  # fmt: skip
            print(f"\nengines: {args.engine_claims} claims, concurrency "
                  f"{args.engine_concurrency} per worker")  # fmt: skip
            for r in result["engines"]:
                line = f"{r['engine']:>20} {r['claims_per_s']:>7.1f} claims/s  {r['wall_s']:.2f} s"
                if "startup_s" in r:
                    line += (f" (workers ready after {r['startup_s']:.2f} s; "
                             f"{r['after_startup_per_s']:.1f} claims/s from then)")  # fmt: skip
                print(line)
        c = result["cache"] = from_cache(root, lat, limit, args.cache_concurrency,
                                         args.cache_claims)  # fmt: skip
        print(f"\nfrom cache: {c['claims']} claims at concurrency {args.cache_concurrency}: "
              f"first {c['first_wall_s']:.2f} s ({c['first_live_llm_calls']} live calls), "
              f"repeat {c['repeat_wall_s']:.2f} s ({c['repeat_live_llm_calls']} live calls, "
              f"{c['repeat_searches']} searches) = {c['repeat_share']:.1%} of the first"
              )  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
