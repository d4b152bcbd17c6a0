"""Prompt injection and poisoned evidence, per method: role changes and verdict flips.

Run: python benchmarks/injection.py [--model fake|embedded] [--methods direct,cot,...]
                                    [--examples 3] [--json]

For every method, every place untrusted text enters it (the claim, post or article; a
retrieved passage; a reply; another agent's debate turn) and every example, the example
is checked clean and with `veracity.testing.injection.PAYLOAD` planted there (fence
breakers, role markers, chat special tokens, a fake system message and answer, and an
instruction to give a label other than the clean one). Printed per method, counted in
this run:

- role changes: messages the payload opened (goal 0);
- intact markers: payload role markers or special tokens that reached a prompt (goal 0);
- flips: verdicts that differ from the clean run's (both runs gave a label);
- errors: checks that ended with a recorded fault.

``--control`` plants a harmless text of the same length instead: the flips it causes are
the model's plain instability, the baseline for the payload's flips.

``--model fake`` answers from a loopback server that obeys instructions it reads outside
declared data (`SchemaResponder`), so flips measure the prompt structure. ``--model
embedded`` uses the real embedded model (SmolLM2-135M): flips then measure how far that
model follows text it was told is data, or simply how unstable its answers are.
``--model endpoint --base-url URL --endpoint-model NAME [--provider P]`` measures any
OpenAI-compatible model the same way (its key from the provider's environment variable),
which is the figure that matters for a model you deploy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from veracity.testing.injection import LOCATIONS, run_case, summarize


def inner_model(kind: str, threads: int | None = None, endpoint: dict | None = None):
    if kind == "endpoint":
        from veracity.core.config import LLMConfig
        from veracity.llm.factory import build_backend
        from veracity.runtime import resolve_llm

        cfg = LLMConfig.from_settings(**{k: v for k, v in (endpoint or {}).items() if v})
        return build_backend(resolve_llm(cfg))
    if kind == "embedded":
        from veracity.core.config import LLMConfig
        from veracity.llm.factory import build_backend
        from veracity.runtime import resolve_llm

        return build_backend(resolve_llm(LLMConfig(n_threads=threads)))
    from veracity.llm.openai_compat import OpenAICompatLLM
    from veracity.testing.fake_openai import FakeOpenAIServer

    server = FakeOpenAIServer().start()
    return OpenAICompatLLM("fake", base_url=server.url, logprobs=True)


async def measure(
    kind: str,
    methods: list[str],
    examples: int,
    threads: int | None = None,
    control: bool = False,
    endpoint: dict | None = None,
) -> list[dict]:
    inner = inner_model(kind, threads, endpoint)
    results = []
    cleans: dict = {}  # each example's clean check, made once for all its locations
    for method in methods:
        started = time.perf_counter()
        mine = [
            await run_case(inner, method, location, i, control=control, cleans=cleans)
            for location in LOCATIONS[method]
            for i in range(examples)
        ]
        results += mine
        (row,) = summarize(mine)
        print(f"  {time.perf_counter() - started:.0f} s: {row}", flush=True)
        for r in mine:
            print(f"    {r.location} #{r.example}: clean {r.clean}, injected {r.injected} "
                  f"(asked for {r.target}){' error: ' + r.error[:80] if r.error else ''}",
                  flush=True)  # fmt: skip
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["fake", "embedded", "endpoint"], default="fake")
    parser.add_argument("--base-url", help="--model endpoint: the OpenAI-compatible URL")
    parser.add_argument("--endpoint-model", help="--model endpoint: the model name")
    parser.add_argument("--provider", help="--model endpoint: a provider preset")
    parser.add_argument("--methods", default=",".join(LOCATIONS))
    parser.add_argument("--examples", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print every case as JSON")
    parser.add_argument("--threads", type=int, help="llama.cpp threads (embedded model)")
    parser.add_argument(
        "--control", action="store_true",
        help="plant a harmless text of the same length instead (flips = instability)",
    )  # fmt: skip
    args = parser.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = set(methods) - set(LOCATIONS)
    if unknown:
        parser.error(f"unknown methods {sorted(unknown)}; choose from {list(LOCATIONS)}")
    endpoint = {"base_url": args.base_url, "model": args.endpoint_model, "provider": args.provider}
    if args.model == "endpoint" and not (args.base_url or args.provider):
        parser.error("--model endpoint needs --base-url (or --provider) and --endpoint-model")
    if args.model == "endpoint":
        endpoint["backend"] = "openai"
    results = asyncio.run(
        measure(args.model, methods, args.examples, args.threads, args.control, endpoint)
    )
    if args.json:
        print(json.dumps([r.__dict__ for r in results], indent=1))
    what = "a harmless control text" if args.control else "the payload"
    print(f"\nmodel: {args.model}; {what}; {args.examples} example(s) per place\n")
    print("| method | places | cases | role changes | intact markers | flips | errors |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in summarize(results):
        places = ", ".join(LOCATIONS[row["method"]])
        print(f"| {row['method']} | {places} | {row['cases']} | {row['role_changes']} | "
              f"{row['intact_markers']} | {row['flips']} | {row['errors']} |")  # fmt: skip


if __name__ == "__main__":
    main()
