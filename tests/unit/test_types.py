from datetime import date, datetime, timezone

import pytest
from pydantic import ValidationError

from veracity.core.types import (
    MAX_INPUT_CHARS,
    Article,
    Claim,
    Document,
    Evidence,
    Post,
    Reply,
    Trace,
    Usage,
    Verdict,
)


def test_claim_requires_text_and_limits_length():
    with pytest.raises(ValidationError, match="empty"):
        Claim(text="   ")
    with pytest.raises(ValidationError, match="limit"):
        Claim(text="x" * (MAX_INPUT_CHARS + 1))
    assert Claim(text="x" * MAX_INPUT_CHARS).text


def test_unknown_fields_are_rejected():
    with pytest.raises(ValidationError):
        Claim(text="a", speeker="typo")


def test_inputs_expose_content_and_cutoff():
    c = Claim(text="Tax cuts pay for themselves", date="2020-05-01", speaker="X")
    assert c.content == "Tax cuts pay for themselves"
    assert c.cutoff == date(2020, 5, 1)
    a = Article(title="Headline", body="Body text.", published_at="2021-01-02T10:00:00")
    assert a.content == "Headline\n\nBody text."
    assert a.cutoff == date(2021, 1, 2)
    assert Article(body="only body").content == "only body"


def test_post_replies_by_time_puts_undated_last():
    post = Post(
        text="Breaking: bridge collapsed",
        replies=[
            Reply(id="b", text="late", created_at=datetime(2020, 1, 2, tzinfo=timezone.utc)),
            Reply(id="u", text="undated"),
            Reply(id="a", text="early", created_at=datetime(2020, 1, 1)),
        ],
    )
    assert [r.id for r in post.replies_by_time()] == ["a", "b", "u"]
    assert [r.id for r in post.replies_by_time(2)] == ["a", "b"]


def test_post_thread_structure_is_checked():
    ok = Post(
        id="p",
        text="claim",
        replies=[Reply(id="a", text="x", parent="p"), Reply(id="b", text="y", parent="a")],
    )
    assert [r.id for r in ok.replies] == ["a", "b"]
    # without a post id, a parent outside the replies may be the post: accepted
    Post(text="claim", replies=[Reply(id="a", text="x", parent="tweet-1")])
    bad = {
        "two replies have the id": [Reply(id="a", text="x"), Reply(id="a", text="y")],
        "neither the post": [Reply(id="a", text="x", parent="ghost")],
        "cycle": [
            Reply(id="a", text="x", parent="b"),
            Reply(id="b", text="y", parent="a"),
            Reply(id="c", text="z", parent="p"),
        ],
        "post's own id": [Reply(id="p", text="x")],
    }
    for message, replies in bad.items():
        with pytest.raises(ValidationError, match=message):
            Post(id="p", text="claim", replies=replies)
    with pytest.raises(ValidationError, match="cycle"):
        Post(text="claim", replies=[Reply(id="a", text="x", parent="a")])


def test_document_domain_strips_www():
    assert Document(id="1", text="t", url="https://www.Example.com/x").domain == "example.com"
    assert Document(id="1", text="t").domain is None


def test_verdict_without_label_must_say_why():
    with pytest.raises(ValidationError, match="abstained or carry an error"):
        Verdict(label=None, label_space="true_false", method="m")
    with pytest.raises(ValidationError, match="abstain_reason"):
        Verdict(label=None, label_space="true_false", method="m", abstained=True)
    v = Verdict(label=None, label_space="true_false", method="m", error="boom")
    assert not v.ok


def test_verdict_json_round_trip_keeps_trace_and_usage():
    trace = Trace()
    trace.add(
        "llm_call", "judge", prompt_tokens=3, completion_tokens=2, cached=False,
        messages=[{"role": "user", "content": "p"}], response="r",
    )  # fmt: skip
    trace.add("search", "wiki", cached=False, results=["a"])
    doc = Document(id="d", text="The sky is blue.", url="https://x.org")
    v = Verdict(
        label="true",
        label_space="true_false",
        method="m",
        score=0.9,
        evidence=[Evidence(document=doc, quote="sky is blue", quote_verified=False)],
        usage=Usage(prompt_tokens=3, completion_tokens=2, llm_calls=1),
        trace=trace,
    )
    back = Verdict.model_validate_json(v.model_dump_json())
    assert back.label == "true"
    assert [e.kind for e in back.trace.events] == ["llm_call", "search"]
    assert back.trace.events[0].data["response"] == "r"
    assert back.usage.total_tokens == 5
    assert len(back.unverified_quotes) == 1


def test_usage_add_sums_counts_not_wall_time():
    a = Usage(prompt_tokens=1, llm_calls=1, cost_usd=0.5, wall_time_s=3)
    a.add(Usage(prompt_tokens=2, llm_calls=2, searches=1, cost_usd=0.25, wall_time_s=9))
    assert (a.prompt_tokens, a.llm_calls, a.searches, a.cost_usd, a.wall_time_s) == (
        3,
        3,
        1,
        0.75,
        3,
    )


def test_trace_events_are_typed_per_kind():
    from veracity.core.events import ModelCall, Ruling

    trace = Trace()
    event = trace.add("ruling", "judge", round=2, decision="TRUE", detail={"extra": "kept"})
    assert isinstance(event, Ruling) and event.round == 2
    assert event.data == {"round": 2, "decision": "TRUE", "extra": "kept"}
    with pytest.raises(ValueError, match="extra_field"):  # a field it does not declare
        trace.add("ruling", "judge", round=2, extra_field="kept")
    call = trace.add("llm_call", "x", prompt_tokens=1, completion_tokens=2, cached=True)
    assert isinstance(call, ModelCall) and call.completion_tokens == 2
    with pytest.raises(ValueError, match="prompt_tokens"):
        trace.add("llm_call", "x", completion_tokens=2, cached=False)  # tokens missing
    with pytest.raises(ValueError, match="round"):
        trace.add("ruling", "judge", round="second")
    with pytest.raises(ValueError, match="unknown trace event kind"):
        trace.add("gossip", "x")  # type: ignore[arg-type]
