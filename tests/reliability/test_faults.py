"""Every method against a model server that injects every fault class at a rate (issue
items 2 and 3): each example ends as a verdict (a label, or a recorded error), never a
traceback; retries stay within the policy; nothing bad is cached."""

from __future__ import annotations

import pytest

from veracity.core.infra import RetryPolicy
from veracity.core.types import Verdict
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.llm.openai_compat import OpenAICompatLLM
from veracity.testing.fake_openai import FAULTS, FakeOpenAIServer
from veracity.testing.injection import LOCATIONS, documents, make_input, offline_method

pytestmark = [pytest.mark.server, pytest.mark.slow]

RATE = 0.3  # share of answers that carry a fault, spread over every class
ATTEMPTS = 4
MIN_FAULTS, MAX_EXAMPLES = 6, 30  # examples run until this many faults were injected


@pytest.mark.parametrize("method", list(LOCATIONS))
async def test_faults_at_a_rate_leave_every_example_accounted_for(method, tmp_path, capsys):
    faults = {name: RATE / len(FAULTS) for name in FAULTS}
    with FakeOpenAIServer(faults=faults, seed=7, stall_s=1.2) as server:
        inner = OpenAICompatLLM("fake", base_url=server.url, logprobs=True, timeout_s=0.8)
        cache = ResponseCache(tmp_path / "llm.sqlite")
        llm = ManagedLLM(inner, cache=cache, retry=RetryPolicy(ATTEMPTS, 0.0, 0.0))
        accounted, crashed, errors, calls, worst, n = 0, [], 0, 0, 0, 0
        while n < MAX_EXAMPLES and (n < 3 or sum(server.injected.values()) < MIN_FAULTS):
            i, n = n, n + 1
            m = offline_method(method, llm, documents(i))
            try:
                verdict = await m.check(make_input(method, i, "claim", None))
            except Exception as exc:  # a traceback would reach the user
                crashed.append(f"{type(exc).__name__}: {exc}")
                continue
            assert isinstance(verdict, Verdict)
            accounted += int(verdict.label is not None or verdict.error is not None)
            errors += int(verdict.error is not None)
            calls += verdict.usage.llm_calls
            attempts = [e.data.get("attempt", 0) for e in verdict.trace.of_kind("error")]
            worst = max([worst, *attempts])
        injected = sum(server.injected.values())
        sent = len(server.requests)
    with capsys.disabled():
        print(f"\n{method}: faults injected {injected}, examples accounted for {accounted}/"
              f"{n} ({errors} with a recorded error), requests {sent} for {calls} "
              f"calls, most retries of one call {worst} (limit {ATTEMPTS - 1})")  # fmt: skip
    assert crashed == []
    assert accounted == n
    assert worst <= ATTEMPTS - 1
    assert injected >= MIN_FAULTS
    for row in cache._db().execute("SELECT response FROM responses"):
        assert "NaN" not in row[0] and '"choices"' not in row[0]
