"""Prefix reuse per check: the code as issue 25 found it against today's defaults.

Run: python benchmarks/prefix_cache.py [--claims 10] [--methods radar s2mad zofia]
     [--threads 1] [--max-tokens 96] [--http]

Each method is checked on the same inputs in two arms (`ARMS`), interleaved input by
input so that a change in the machine's load falls on both: "before" is the paper's
prompt layout with a label's samples asked all at once, and requests that never wait for
a slot, as the code stood when the issue was filed; "after" is the shared-first layout,
samples in turn on a backend that keeps prompts per slot, and requests that wait for the
slot computing their prefix (today's defaults). The model is the embedded one (llama.cpp
in-process, one instance per arm, `--threads` threads, the response cache off so every
call reaches the model).
llama.cpp reports per call how many prompt tokens it took from its prefix cache
(`prompt_tokens_details.cached_tokens`); "prefilled" is prompt tokens minus those.
Printed per method and arm, per check: LLM calls, prompt tokens sent, tokens prefilled,
the reused share, completion tokens and wall time (and the debate rounds run, where the
method reports them: with early stopping the arms may debate for different lengths); then
what 100 checks would cost at hosted list prices (`--prices`), with and without the
cached-input rate. RADAR and
S2MAD get the inputs below, ZoFia articles of about 1,200 characters; any other method
(`--methods`) is built as the injection benchmark builds it offline, over in-memory
sources (inputs too, but for ZoFia), with its reply caps at four times `--max-tokens`;
`--articles` gives those that take news articles ZoFia's articles instead of the injection
benchmark's one-sentence claims.

`--http` runs the same against llama.cpp's own HTTP server on loopback (the same wheel,
`xllamacpp.Server` with a port, one per arm), through the OpenAI-compatible client,
reading the cache counts the server reports; the after arm's client is given the
server's slot count (`slots`), so it places requests as the embedded backend does.

`--offline` needs no model: every registered method that can be built offline
(`veracity.testing.injection.offline_method`; `--offline-methods` picks some) runs on the
schema-filling fake (`veracity.testing.schema`) over in-memory sources, and each request
is written out as the chat template lays it out (ChatML); per check, the share of prompt
characters that repeat, character for character, the start of an earlier request of the
same check is what a prefix cache could skip, and the rest is what it must prefill. The
sources hold the injection benchmark's two passages per example plus ten of about 60
words. Methods with a `prompt_layout` option are measured with both layouts.

The inputs are synthetic and offline: each RADAR claim carries ten evidence passages of
about 60 words (`evidence: given`), each S2MAD post eight replies. The model is the
135M-parameter default, so verdicts mean nothing; the figures measure where the prompt
tokens go. Replies are capped at `--max-tokens` to keep the run short (the prefill share
is what the layout changes). Figures are ratios within one run; state the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import time
from datetime import datetime, timezone

from veracity.core.types import Article, Claim, Document, Post, Reply
from veracity.llm.client import DEFAULT_PRICES, ManagedLLM, priced
from veracity.llm.slots import shared_chars
from veracity.methods.base import load_method

TOPICS = ["bridge", "vaccine", "tax", "river", "school", "rail", "wage", "forest", "port", "dam"]


def radar_inputs(n: int) -> list[Claim]:
    claims = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        evidence = [
            Document(
                id=f"c{i}-e{j}",
                title=f"Report {j} on the {topic}",
                text=" ".join(
                    f"The {topic} project {i} reached stage {j} in {1990 + j} according to "
                    f"the regional office, which counted {100 + 7 * j} workers and a budget "
                    f"of {3 + j} million.".split()
                )
                * 2,
            )
            for j in range(10)
        ]
        claims.append(
            Claim(
                id=f"c{i}",
                text=f"The {topic} project {i} was finished ahead of schedule.",
                evidence=evidence,
            )
        )
    return claims


def s2mad_inputs(n: int) -> list[Post]:
    when = datetime(2024, 5, 1, tzinfo=timezone.utc)
    posts = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        replies = [
            Reply(
                id=f"p{i}-r{j}",
                text=(
                    f"I saw the {topic} news {j} times today, and the pictures look real to me."
                    if j % 2
                    else f"This {topic} story {j} is made up, no outlet has confirmed it."
                ),
                created_at=when,
            )
            for j in range(8)
        ]
        posts.append(
            Post(
                id=f"p{i}",
                text=f"BREAKING: the {topic} {i} collapsed this morning!",
                replies=replies,
                created_at=when,
            )
        )
    return posts


def zofia_inputs(n: int) -> list[Article]:
    """News articles of about 1,200 characters (the median GossipCop article in our copy
    has 1,225), built from the RADAR claim's first four passages."""
    articles = []
    for i, claim in enumerate(radar_inputs(n)):
        topic = TOPICS[i % len(TOPICS)]
        lead = (
            f"Officials in Marlow said on Monday that the {topic} project {i} was finished "
            f"ahead of schedule. The Regional Office published its figures the same day."
        )
        body = " ".join([lead, *(d.text for d in claim.evidence[:4])])
        articles.append(Article(title=f"Marlow {topic} project finished early", body=body))
    return articles


INPUTS = {"radar": radar_inputs, "s2mad": s2mad_inputs, "zofia": zofia_inputs}
CONFIG = {  # methods built here; any other is built as the injection benchmark does
    # the judge's JSON (reason, verdict) needs room: a cut reply is invalid and asked again
    "radar": lambda m: {"evidence": "given", "max_tokens_turn": m, "max_tokens_judge": 4 * m},
    "s2mad": lambda m: {"max_tokens": m},
}
# The two arms of the comparison. "before" is the code as the issue found it: the paper's
# layout, and a label's samples asked all at once (on llama.cpp the ones that land on
# another slot compute the whole prompt again); "after" is today's default: the shared
# layout, and samples in turn where the backend keeps prompts per slot. RADAR's judge
# then had the shared judge's 1,000-character reason; today its own limit (500).
ARMS = {
    "before": {"prompt_layout": "paper", "sample_order": "concurrent", "judge_reason_chars": 1000},
    "after": {"prompt_layout": "shared", "sample_order": "auto"},
}
# The embedded backend of each arm: before, a request takes the free slot holding most of
# its prompt and never waits (as llama.cpp chose slots); after, it waits for a busy slot
# that is computing its prefix (`veracity.llm.slots`). Each arm has its own llama.cpp, so
# neither reuses what the other left in a slot.
EMBEDDED_ARMS = {"before": {"slot_wait_chars": 0}, "after": {}}
HTTP_SLOTS = 2  # the loopback llama.cpp server's slots (--http)


def offline_documents(n: int) -> list:
    """In-memory documents for a method built offline: the injection benchmark's
    passages plus ten longer ones per input."""
    from veracity.testing.injection import documents

    evidence = radar_inputs(n)
    return [d for i in range(n) for d in (*documents(i), *evidence[i].evidence)]


def build(llm, method: str, arm: str, max_tokens: int, docs: list | None, extra: dict):
    """`method` on `llm` in `arm`'s settings (those its config has) and `extra` (both
    arms), replies capped."""
    from veracity.testing.injection import offline_method

    if docs is None:
        checker = load_method(method, llm=llm, config=CONFIG[method](max_tokens))
    else:
        checker = offline_method(method, llm, docs)
    fields = type(checker.config).model_fields
    update = {k: v for k, v in ARMS[arm].items() if k in fields}
    if docs is not None:  # caps of 4x: these methods' replies are JSON with a reason
        update |= {
            k: min(getattr(checker.config, k), 4 * max_tokens)
            for k in fields
            if k.startswith("max_tokens")
        }
    checker.config = type(checker.config).model_validate(
        {**checker.config.model_dump(), **update, **extra}
    )
    return checker


async def run_arms(
    llms: dict[str, ManagedLLM],
    method: str,
    n: int,
    max_tokens: int,
    extra: dict,
    articles: bool = False,
) -> dict[str, dict]:
    """Both arms on the same `n` inputs, each on its model in `llms`, interleaved: input i
    runs in one arm, then in the other (which goes first alternates), so a change in the
    machine's load falls on both. `articles`: a method built as the injection benchmark
    builds it gets ZoFia's articles instead of its one-sentence claims."""
    from veracity.testing.injection import make_input

    if method in INPUTS:
        items = INPUTS[method](n)
    elif articles:
        items = zofia_inputs(n)
    else:  # the injection benchmark's clean inputs
        items = [make_input(method, i, "claim", None) for i in range(n)]
    docs = None if method in CONFIG else offline_documents(n)
    checkers = {arm: build(llms[arm], method, arm, max_tokens, docs, extra) for arm in ARMS}
    fields = ("calls", "prompt", "cached", "completion", "wall", "errors", "rounds")
    totals = {arm: dict.fromkeys(fields, 0) for arm in ARMS}
    for i, item in enumerate(items):
        for arm in list(ARMS)[:: 1 if i % 2 == 0 else -1]:
            t = totals[arm]
            started = time.perf_counter()
            verdict = await checkers[arm].check(item)
            t["wall"] += time.perf_counter() - started
            t["calls"] += verdict.usage.llm_calls
            t["prompt"] += verdict.usage.prompt_tokens
            t["cached"] += verdict.usage.cached_prompt_tokens
            t["completion"] += verdict.usage.completion_tokens
            t["errors"] += verdict.error is not None
            # debate rounds run, where the method reports them (RADAR, ZoFia): with early
            # stopping the arms may debate for different lengths
            t["rounds"] += verdict.metadata.get("rounds_run") or verdict.metadata.get(
                "debate_rounds", 0
            )
        done = "  ".join(f"{arm} {t['wall']:.0f} s" for arm, t in totals.items())
        print(f"  {method} {i + 1}/{n}: {done}", file=sys.stderr, flush=True)
    return totals


def show(method: str, layout: str, t: dict, n: int) -> None:
    prefilled = t["prompt"] - t["cached"]
    share = t["cached"] / t["prompt"] if t["prompt"] else 0.0
    print(
        f"{method:<8} {layout:<7} {t['calls'] / n:>6.1f} {t['prompt'] / n:>9.0f} "
        f"{prefilled / n:>10.0f} {share:>7.1%} {t['completion'] / n:>7.0f} {t['wall'] / n:>8.1f}"
        f"   errors {t['errors']}" + (f", rounds {t['rounds'] / n:.1f}" if t["rounds"] else "")
    )


def costs(method: str, totals: dict[str, dict], n: int, models: list[str]) -> None:
    """USD for 100 checks per arm at each model's list prices, with every prompt token at
    the input rate, and with the reused ones at the cached-input rate. The backend's reused
    counts stand in for what a hosted cache would reuse (OpenAI caches prompts of 1,024
    tokens or more, in steps of 128)."""
    for model in models:
        price = DEFAULT_PRICES[model]
        row = []
        for arm, t in totals.items():
            full = priced(price, t["prompt"], t["completion"]) * 100 / n
            cached = priced(price, t["prompt"], t["completion"], t["cached"]) * 100 / n
            row.append(f"{arm} ${full:.3f} / ${cached:.3f}")
        print(f"  100 {method} checks at {model} prices, list / cached rate: {'; '.join(row)}")


def embedded_llms(threads: int) -> dict[str, ManagedLLM]:
    """One embedded model per arm (`EMBEDDED_ARMS`)."""
    from veracity.llm.embedded import EmbeddedLLM
    from veracity.runtime.home import home_paths

    models = home_paths().models
    return {
        arm: ManagedLLM(EmbeddedLLM(n_threads=threads, models_dir=models, **opts), cache=None)
        for arm, opts in EMBEDDED_ARMS.items()
    }


def http_llm(threads: int, place: bool):
    """llama.cpp's HTTP server on loopback (`HTTP_SLOTS`) and the OpenAI-compatible client to
    it; `place`: the client is told the slot count and places requests itself."""
    import httpx
    import xllamacpp as xlc

    from veracity.llm.embedded import EmbeddedLLM
    from veracity.llm.openai_compat import OpenAICompatLLM
    from veracity.llm.options import DEFAULT_REPEAT_PENALTY
    from veracity.runtime.home import home_paths

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    params = xlc.CommonParams()
    params.model.path = str(EmbeddedLLM(models_dir=home_paths().models).ensure_model())
    params.n_ctx, params.n_parallel = 8192 * HTTP_SLOTS, HTTP_SLOTS
    params.kv_unified = False
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.verbosity = -1
    params.port, params.hostnames, params.model_alias = port, ["127.0.0.1"], {"smollm2-135m"}
    server = xlc.Server(params)
    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    client = OpenAICompatLLM(  # the embedded backend's penalty, as a run config sends it
        base_url=f"http://127.0.0.1:{port}/v1",
        model="smollm2-135m",
        api_key="none",
        repeat_penalty=DEFAULT_REPEAT_PENALTY,
        slots=HTTP_SLOTS if place else None,
    )
    return ManagedLLM(client, cache=None), server


def chatml(messages: list[dict]) -> str:
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)


def reused_chars(requests: list[str]) -> int:
    """Characters of each request that extend the start of an earlier one."""
    return sum(
        max((shared_chars(r, e) for e in requests[:i]), default=0) for i, r in enumerate(requests)
    )


def offline_names() -> list[str]:
    """Every registered method, the injection benchmark's first (in their order)."""
    from veracity.core.registry import methods
    from veracity.testing.injection import LOCATIONS

    return [*LOCATIONS, *sorted(set(methods.names()) - set(LOCATIONS))]


async def offline_row(name: str, layout: str, examples: int) -> tuple[int, int, int]:
    """(requests, prompt characters, reused characters) over `examples` checks."""
    from veracity.testing.injection import Recording, documents, make_input, offline_method
    from veracity.testing.schema import schema_llm

    requests = chars = reused = 0
    for i in range(examples):
        llm = Recording(schema_llm())
        docs = documents(i) + radar_inputs(i + 1)[i].evidence  # ~10 longer passages
        method = offline_method(name, llm, docs)
        if layout:
            method.config = method.config.model_copy(update={"prompt_layout": layout})
        await method.check(make_input(name, i, "claim", None))
        texts = [chatml(r) for r in llm.requests]
        requests += len(texts)
        chars += sum(len(x) for x in texts)
        reused += reused_chars(texts)
    return requests, chars, reused


async def offline(examples: int, names: list[str] | None = None) -> None:
    from veracity.testing.injection import Recording, offline_method
    from veracity.testing.schema import schema_llm

    print(
        "method          layout   requests/check  prompt chars/check  extend an earlier prefix"
        "  chars to prefill/check"
    )
    for name in names or offline_names():
        try:
            probe = offline_method(name, Recording(schema_llm()), [])
        except Exception as exc:  # a method that needs more than in-memory sources
            print(f"{name:<15} not built offline: {type(exc).__name__}: {exc}")
            continue
        has_layout = "prompt_layout" in type(probe.config).model_fields
        for layout in ["paper", "shared"] if has_layout else [""]:
            requests, chars, reused = await offline_row(name, layout, examples)
            print(
                f"{name:<15} {layout or '-':<8} {requests / examples:>14.1f} "
                f"{chars / examples:>19,.0f} {reused / max(chars, 1):>25.0%}"
                f" {(chars - reused) / examples:>23,.0f}"
            )


def setting(text: str) -> tuple[str, object]:
    """``key=value`` from the command line; the value read as JSON where it is JSON."""
    import json

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise SystemExit(f"--set takes KEY=VALUE, not {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--claims", type=int, default=10)
    parser.add_argument("--methods", nargs="+", default=[*INPUTS, "zofia"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--http", action="store_true", help="also against llama.cpp's HTTP server")
    parser.add_argument("--http-only", action="store_true", help="only llama.cpp's HTTP server")
    parser.add_argument(
        "--prices",
        nargs="*",
        default=["gpt-4o-mini", "deepseek-chat"],
        choices=sorted(DEFAULT_PRICES),
        help="price lists",
    )
    parser.add_argument(
        "--articles",
        action="store_true",
        help="methods built as the injection benchmark builds them check ZoFia's articles "
        "(about 1,200 characters) instead of one-sentence claims",
    )
    parser.add_argument("--offline", action="store_true", help="prompt characters, no model")
    parser.add_argument("--offline-methods", nargs="+", help="--offline: these (default: all)")
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="method settings for both arms (a JSON value or a string), e.g. early_stop=false",
    )
    args = parser.parse_args()
    extra = dict(setting(s) for s in args.set)
    if args.offline:
        await offline(args.claims, args.offline_methods)
        return
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {args.claims} inputs per method")
    if extra:
        print(f"settings of both arms: {extra}")
    backends = [] if args.http_only else [("embedded", embedded_llms(args.threads), [])]
    if args.http or args.http_only:  # a server per arm; after: the client places requests
        served = {arm: http_llm(args.threads, place=arm == "after") for arm in ARMS}
        llms = {arm: llm for arm, (llm, _) in served.items()}
        backends.append(("llama.cpp HTTP", llms, [server for _, server in served.values()]))
    for backend, llms, _servers in backends:
        print(f"\n{backend}: per check, means")
        print("method   arm      calls    prompt  prefilled  reused  output     wall s")
        for method in args.methods:
            totals = await run_arms(
                llms, method, args.claims, args.max_tokens, extra, args.articles
            )
            for arm, t in totals.items():
                show(method, arm, t, args.claims)
            costs(method, totals, args.claims, args.prices)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
