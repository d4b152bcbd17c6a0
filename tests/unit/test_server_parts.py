"""Server parts on their own: the rate limiter, the token check, the job store, live jobs."""

from __future__ import annotations

from unittest.mock import MagicMock

from veracity.core.types import Trace
from veracity.server.guards import RateLimiter, TokenCheck
from veracity.server.jobs import LiveJob
from veracity.server.store import JobStore


def test_a_client_gets_its_burst_then_the_rate_and_others_are_apart():
    limiter = RateLimiter(per_minute=60, burst=2)
    assert [limiter.take("a", now=0.0) for _ in range(2)] == [0.0, 0.0]
    wait = limiter.take("a", now=0.0)
    assert 0.9 < wait <= 1.0
    assert limiter.take("b", now=0.0) == 0.0
    assert limiter.take("a", now=1.0) == 0.0  # one token back after a second
    assert RateLimiter(per_minute=0, burst=1).take("a") == 0.0  # 0 turns it off


def test_the_limiter_forgets_the_longest_idle_client_when_full():
    limiter = RateLimiter(per_minute=60, burst=1, max_clients=2)
    limiter.take("old", now=0.0)
    limiter.take("new", now=5.0)
    limiter.take("third", now=6.0)
    assert set(limiter._buckets) == {"new", "third"}


def test_the_token_must_be_a_bearer_token_and_match_exactly():
    check = TokenCheck("abc")
    assert check.allows("Bearer abc") and check.allows("bearer abc")
    assert not check.allows("Bearer abcd") and not check.allows("abc")
    assert not check.allows(None) and not check.allows("Basic abc")
    assert TokenCheck(None).allows(None) and not TokenCheck(None).enabled


def test_the_store_keeps_jobs_events_and_pages_history(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    for i in range(3):
        store.create(f"j{i}", {"input": {"text": str(i)}}, method="cot", input_kind="claim",
                     preview=str(i))  # fmt: skip
    store.add_event("j1", 1, "status", {"status": "queued"})
    store.started("j1")
    store.finish("j1", "done", verdict={"label": "true", "score": 1.0})
    assert [r.id for r in store.history(2)] == ["j2", "j1"]
    assert [r.id for r in store.history(5, before="j1")] == ["j0"]
    row = store.get("j1")
    assert (row.status, row.label, row.score) == ("done", "true", 1.0)
    assert row.verdict == {"label": "true", "score": 1.0}
    assert store.events("j1") == [(1, "status", {"status": "queued"})]
    assert store.interrupt_unfinished() == ["j0", "j2"]
    assert store.get("j0").status == "interrupted"
    store.close()


def test_events_recorded_after_a_job_ended_are_dropped_not_raised(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    job = LiveJob(id="j", plan=MagicMock(), store=store)
    event = Trace().add("note", "late")
    job.on_trace(event)
    job.stream.close()
    job.on_trace(event)  # a straggler task: no error, not stored
    assert [seq for seq, _, _ in store.events("j")] == [1]
    store.close()
