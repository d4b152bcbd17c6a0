"""RumourEval 2017 (PHEME): Twitter threads with reply stance and thread veracity.

File (folder ``rumoureval2017/``): ``threads_train_dev.jsonl``, one thread a line:
``{thread_id, event, split (train/dev), veracity (true/false/unverified), source_text,
source_created_at, source_stance, replies: [{id, parent, created_at, text, stance}]}``.
Each thread is a Post (the source tweet) whose replies keep their parent ids and
timestamps, with the reply's stance (support / deny / query / comment) in
``Reply.metadata["stance"]``. The label is the thread's veracity (``rumor_veracity``);
``labels="rumor"`` applies the registered ``rumor_veracity_to_rumor`` convention.
Both splits live in one file: a split keeps the lines whose ``split`` field matches.
Tweet authors are not in the file.
"""

from __future__ import annotations

from typing import Any, ClassVar

from veracity.core.dates import parse_date
from veracity.core.types import Post, Reply
from veracity.datasets._common import BaseDataset, Loc, SplitFiles, text_field
from veracity.datasets.base import DatasetInfo, Example

TWITTER_TIME = "%a %b %d %H:%M:%S %z %Y"  # "Wed Jan 07 11:07:51 +0000 2015"


def thread_post(raw: dict[str, Any]) -> Post:
    """A thread as a Post with its replies."""
    thread_id = str(raw["thread_id"])
    known = {thread_id} | {str(r["id"]) for r in raw["replies"]}
    replies = []
    for r in raw["replies"]:
        parent = str(r["parent"]) if r.get("parent") is not None else None
        if parent is not None and parent not in known:
            raise ValueError(f"reply {r['id']} answers {parent}, which is not in the thread")
        replies.append(
            Reply(
                id=str(r["id"]),
                text=text_field(r, "text"),
                created_at=parse_date(r.get("created_at"), formats=(TWITTER_TIME,)),
                parent=parent,
                metadata={"stance": r.get("stance")},
            )
        )
    return Post(
        id=thread_id,
        text=text_field(raw, "source_text"),
        created_at=parse_date(raw.get("source_created_at"), formats=(TWITTER_TIME,)),
        replies=replies,
        metadata={"event": raw.get("event"), "stance": raw.get("source_stance")},
    )


class RumourEvalDataset(BaseDataset):
    """RumourEval 2017 task B threads (train 272, dev 25 here; test held back)."""

    info = DatasetInfo(
        name="rumoureval2017",
        label_space="rumor_veracity",
        splits=("train", "dev"),
        input_kind="post",
        folder="rumoureval2017",
        description="RumourEval 2017: Twitter rumour threads with replies, reply stance "
        "and thread veracity (true / false / unverified)",
        licence="annotations CC BY 4.0; tweet text under platform terms",
    )
    split_files: ClassVar[SplitFiles] = {
        "train": ("threads_train_dev.jsonl",),
        "dev": ("threads_train_dev.jsonl",),
    }

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example | None:
        if raw["split"] not in self.info.splits:
            raise ValueError(f"split {raw['split']!r} is not one of {self.info.splits}")
        if raw["split"] != split:
            return None  # a line of the other split
        post = thread_post(raw)
        return self.example(
            raw["veracity"],
            loc,
            id=post.id or loc.default_id,
            input=post,
            metadata={"split": split, "event": raw.get("event")},
        )


RUMOUREVAL2017 = RumourEvalDataset()
