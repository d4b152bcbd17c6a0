"""Reply schemas on the real embedded decoder: llguidance takes every one of them, and a
constrained token costs about what an unconstrained one does (benchmarks/
constrained_decoding.py measures every debate schema; these are the ones whose tokens
cost most through llama.cpp's GBNF path: 1.42-1.63x there, 1.03-1.07x through llguidance,
process CPU time per generated token on one thread, load average ~11 on 2 cores)."""

import json
import statistics
import sys
import time
from pathlib import Path

import pytest

from veracity.llm.base import LLMRequest, user
from veracity.llm.embedded import EmbeddedLLM
from veracity.llm.structured import schema_for
from veracity.runtime.home import home_paths

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

pytestmark = [pytest.mark.embedded, pytest.mark.slow]


@pytest.fixture(scope="module")
def llm():
    model = EmbeddedLLM("smollm2-135m", models_dir=home_paths().models, n_parallel=1, n_threads=1)
    model.load()
    return model


def _send(llm, request):
    body = llm.server_body(llm.payload(request))
    started = time.process_time()
    reply = llm.load().handle_chat_completions(body)
    return body, reply, time.process_time() - started


def test_llguidance_constrains_every_reply_schema(llm):
    """A grammar llguidance cannot compile leaves decoding unconstrained without a word,
    so each distinct reply schema is sent with a prompt that invites prose instead."""
    from _reply_models import all_reply_models

    seen, failures = set(), {}
    for key, model in sorted(all_reply_models().items()):
        schema = schema_for(model)
        text = json.dumps(schema, sort_keys=True)
        if text in seen:
            continue
        seen.add(text)
        request = LLMRequest(messages=[user("Say hello.")], max_tokens=2, json_schema=schema)
        body, reply, _ = _send(llm, request)
        content = reply.get("choices", [{}])[0].get("message", {}).get("content", "")
        if not body.get("grammar", "").startswith("%llguidance") or not content.startswith("{"):
            failures[key] = reply.get("error") or content
    assert len(seen) > 100 and failures == {}


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("veracity.methods.radar.roles", "DomainReply"),
        ("veracity.methods.s2mad.method", "SubjectivityAnswer"),
        ("veracity.methods.radar.stopping", "StopReply"),
    ],
)
def test_a_constrained_token_costs_at_most_1_3_unconstrained_ones(llm, module, name):
    model = getattr(__import__(module, fromlist=[name]), name)
    schema = schema_for(model)
    messages = [user("Claim: The Eiffel Tower was moved to Berlin in 2019. Answer in JSON.")]
    ratios = []
    for _ in range(3):
        request = LLMRequest(messages=messages, max_tokens=48, json_schema=schema)
        _, reply, cpu = _send(llm, request)
        model.model_validate_json(reply["choices"][0]["message"]["content"])
        n = reply["timings"]["predicted_n"]
        plain = LLMRequest(messages=messages, max_tokens=max(n, 8))
        body = {**llm.payload(plain), "ignore_eos": True}
        started = time.process_time()
        free = llm.load().handle_chat_completions(body)
        plain_cpu = time.process_time() - started
        ratios.append((cpu / n) / (plain_cpu / free["timings"]["predicted_n"]))
    assert statistics.median(ratios) <= 1.3, ratios
