"""S2MAD's own panel in the web UI: the replies split by stance, with their texts and scores.

Read from the check's trace: the ``stance_separation`` stage (the ids of P and N) and the
stance scorer's decisions (``scores``: reply id -> s_i); the texts come from the input's
replies. A check without the stage (it failed before the split) has no panel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from veracity.core.events import Decision, Stage, TraceEvent
from veracity.methods.view import ViewGroup, ViewItem, ViewPart

SIDES = (("p", "Supporting"), ("n", "Opposing"))


def stance_groups(events: Sequence[TraceEvent], item: Mapping[str, Any]) -> list[ViewPart]:
    """The "Replies by stance" panel ([] when the trace has no stance split)."""
    texts = {
        r.get("id"): r.get("text") or ""
        for r in item.get("replies") or []
        if isinstance(r, Mapping)
    }
    scores: dict[str, Any] = {}
    split: Mapping[str, Any] | None = None
    for event in events:
        match event:
            case Decision() if isinstance(event.data.get("scores"), Mapping):
                scores.update(event.data["scores"])
            case Stage(step="stance_separation"):
                split = event.data
    if split is None:
        return []
    groups = []
    for key, heading in SIDES:
        ids = [str(i) for i in split.get(key) or []]
        items = [ViewItem(texts.get(i) or i, _score(scores.get(i))) for i in ids]
        groups.append(ViewGroup(f"{heading} ({len(items)})", items))
    return [ViewPart("stance-groups", "Replies by stance", groups)]


def _score(value: Any) -> str | None:
    return f"stance {value:.2f}" if isinstance(value, int | float) else None
