"""Scripting helpers for the S2MAD tests: a thread, a stance scorer, debaters, a judge."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

from veracity.core.types import Post, Reply
from veracity.testing import ScriptedLLM, ScriptedReply

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)

# Our own invented thread (no real tweets): reply text -> the stance score we script.
THREAD = {
    "Saw the fire trucks on Main Street myself.": 0.9,
    "The city account confirmed it ten minutes ago.": 0.7,
    "Stay safe everyone.": 0.2,
    "Source? Nothing on the local news.": -0.6,
    "This photo is from a drill two years ago.": -0.95,
    "The moon caused it, obviously.": 0.0,
}
CLAIM = "BREAKING: the old library on Main Street is on fire, roads closed."


def make_post(scores: dict[str, float] | None = None, *, dated: bool = True) -> Post:
    texts = list(scores or THREAD)
    replies = [
        Reply(
            id=f"r{i}",
            text=text,
            created_at=T0 + timedelta(minutes=i) if dated else None,
            parent="p0",
        )
        for i, text in enumerate(texts, 1)
    ]
    return Post(id="p0", text=CLAIM, created_at=T0, replies=replies)


def comments_in(prompt: str) -> list[tuple[str, str]]:
    """(local id, text) of the replies listed in a stance-scoring prompt."""
    return re.findall(r'^<reply id="(c\d+)">\n(.*)\n</reply>$', prompt, re.M)


def scorer(scores: dict[str, float] | None = None):
    """A scripted scorer reply: the score of each listed reply, looked up by its text;
    only the replies whose ids the reply schema admits, as a constrained decoder would
    (a re-ask shows its whole batch and asks for some)."""
    table = scores or THREAD

    def reply(request):
        items = comments_in(request.messages[-1].content)
        if request.json_schema is not None:
            spec = request.json_schema["$defs"]["CommentScore"]["properties"]["id"]
            asked = spec.get("enum", [spec.get("const")])
            items = [(lid, text) for lid, text in items if lid in asked]
        return json.dumps(
            {"scores": [{"id": lid, "reason": "r", "score": table[text]} for lid, text in items]}
        )

    return reply


def argument(stance: str, text: str = "because") -> str:
    return json.dumps({"argument": text, "stance": stance})


def debaters(llm: ScriptedLLM, plan: dict[str, list[str]]) -> ScriptedLLM:
    """Script both debaters: plan[speaker][round] is the answer given in that round."""
    for speaker, answers in plan.items():

        def reply(request, speaker=speaker, answers=answers):
            round_no = int(request.tag.split(":")[2])
            return argument(
                answers[round_no], f"{speaker} round {round_no} says {answers[round_no]}"
            )

        llm.on(".", reply, tag=speaker)
    return llm


def judge(verdict: str, alternatives: dict[str, float] | None = None) -> ScriptedReply:
    return ScriptedReply(
        json.dumps({"reason": "the judge weighed both sides", "verdict": verdict}),
        alternatives,
        at=verdict,
    )


def subjectivity(answer: str) -> str:
    return json.dumps({"answer": answer})


def full_script(
    *,
    subjective: str = "No",
    plan: dict[str, list[str]] | None = None,
    verdict: ScriptedReply | None = None,
    scores: dict[str, float] | None = None,
) -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.on(".", scorer(scores), tag="stance")
    llm.on(".", subjectivity(subjective), tag="subjectivity")
    debaters(llm, plan or {"agent_p": ["Real"] * 3, "agent_n": ["Fake"] * 3})
    if verdict is not None:
        llm.on(".", verdict, tag="judge")
    return llm
