"""S2MAD end to end on the embedded model for one RumourEval 2017 thread.

The thread is read straight from the data dir with a tiny local reader (tweets cannot be
copied into the repo). The settings are scaled down so that the 135M model finishes on a
laptop CPU: two replies per side, one update round, short replies, no per-reply reasons.
"""

import json
from datetime import datetime

import pytest

from veracity.core.config import LLMConfig
from veracity.core.labels import RUMOR
from veracity.core.types import Post, Reply, Stance
from veracity.llm.factory import build_llm
from veracity.methods.s2mad import S2MADMethod
from veracity.runtime import resolve_llm
from veracity.runtime.home import home_paths

pytestmark = [pytest.mark.embedded, pytest.mark.data, pytest.mark.slow]

TWITTER_TIME = "%a %b %d %H:%M:%S %z %Y"
SMALL = {
    "top_k": 2,
    "rounds": 1,
    "max_tokens": 200,
    "stance_tokens_per_reply": 24,
    "stance_reasons": False,
}


def _short_dev_thread(data_dir) -> Post:
    """The first dev thread with two to four replies, as a Post."""
    path = data_dir / "rumoureval2017" / "threads_train_dev.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["split"] == "dev" and 2 <= len(row["replies"]) <= 4:
                break
        else:
            pytest.skip("no short dev thread in the file")
    return Post(
        id=str(row["thread_id"]),
        text=row["source_text"],
        created_at=datetime.strptime(row["source_created_at"], TWITTER_TIME),
        replies=[
            Reply(
                id=str(r["id"]),
                text=r["text"],
                created_at=datetime.strptime(r["created_at"], TWITTER_TIME),
                parent=str(r["parent"]),
            )
            for r in row["replies"]
        ],
    )


async def test_s2mad_on_one_rumoureval_thread(benchmark_data_dir):
    post = _short_dev_thread(benchmark_data_dir)
    method = S2MADMethod(
        llm=build_llm(resolve_llm(LLMConfig(cache_mode="off")), models_dir=home_paths().models),
        config=SMALL,
    )
    verdict = await method.check(post)

    assert verdict.error is None, verdict.error
    assert verdict.label in RUMOR.labels
    if verdict.probabilities is None:  # consensus: no probability measured
        assert verdict.score == RUMOR.score(verdict.label) and verdict.confidence is None
    else:
        assert verdict.score == pytest.approx(verdict.probabilities["non-rumor"])
    meta = verdict.metadata
    # Every reply was scored or is listed as an error; P and N follow the scores' signs.
    scores, errors = meta["stance_scores"], meta["stance_errors"]
    assert set(scores) | set(errors) == {r.id for r in post.replies}
    assert all(-1.0 <= s <= 1.0 for s in scores.values())
    assert all(scores[i] > 0 for i in meta["P"]) and all(scores[i] < 0 for i in meta["N"])
    stances = {e.document.id: e.stance for e in verdict.evidence}
    assert stances == {
        **dict.fromkeys(meta["P"], Stance.SUPPORTS),
        **dict.fromkeys(meta["N"], Stance.REFUTES),
    }
    # Subjectivity question, one scoring call, 2 debaters x 2 rounds, maybe the judge.
    turns = verdict.trace.of_kind("agent_turn")
    assert [t.data["round"] for t in turns] == [0, 0, 1, 1]
    assert meta["decided_by"] in ("consensus", "judge")
    assert verdict.usage.llm_calls >= 6 and verdict.usage.completion_tokens > 0
    assert all(
        e.data["temperature"] == 0.2
        for e in verdict.trace.of_kind("llm_call")
        if e.name.startswith(("agent_", "judge"))
    )
