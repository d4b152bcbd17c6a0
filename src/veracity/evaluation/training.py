"""Running a trainable method over a labelled dataset split (``veracity train``).

A method's trainer (e.g. `veracity.methods.toe.training.ToETrainer`) stores what each
claim taught it and fits its parts; this module feeds it the examples one at a time,
under the same leakage guards as an evaluation (each example's date as the evidence
cutoff, the dataset's fact-check sites and the example's own record excluded), and
reports progress. Examples the trainer already holds are skipped, so a re-run resumes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from veracity.core.labels import LabelSpace
from veracity.core.types import Verdict
from veracity.datasets import DatasetInfo, Example
from veracity.evaluation.runner import guards_for
from veracity.retrieval.guards import eval_guards


class Trainer(Protocol):
    """What `collect` needs from a method's trainer."""

    method: Any

    def done(self) -> set[str]: ...

    def record(self, example_id: str, gold: float, verdict: Verdict, **data: Any) -> dict: ...


async def collect(
    trainer: Trainer,
    examples: Sequence[Example],
    info: DatasetInfo,
    space: LabelSpace,
    on_record: Callable[[dict, Verdict], None] | None = None,
) -> int:
    """Check every example the trainer does not hold yet and give it the outcome.

    Gold labels must already be in `space` (the method's label space); the trainer gets
    the gold veracity score. Returns how many examples were checked now.
    """
    done = trainer.done()
    count = 0
    for example in examples:
        if example.id in done:
            continue
        started = time.perf_counter()
        with eval_guards(guards_for(example, info)):
            verdict = await trainer.method.check(example.input)
        gold = space.score(example.label)
        rec = trainer.record(
            example.id, gold, verdict, latency_s=round(time.perf_counter() - started, 3)
        )
        count += 1
        if on_record is not None:
            on_record(rec, verdict)
    return count
