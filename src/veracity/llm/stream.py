"""Join streamed chat-completion chunks into one chat-completion body.

Backends stream so that a request can be stopped part-way (a timeout, a cancelled
check); the joined body has the shape of a non-streamed reply, so one parser reads both.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def join_chunks(chunks: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One ``chat.completion`` body from ``chat.completion.chunk`` objects.

    Content deltas are concatenated, per-token logprobs appended in order, and the
    finish reason, usage, timings and model name taken from the chunks that carry them.
    Chunks that are not dicts or have no usable choice are skipped (usage-only chunks
    have an empty ``choices`` list).
    """
    text: list[str] = []
    tokens: list[Any] = []
    body: dict[str, Any] = {}
    finish: str | None = None
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        for key in ("model", "usage", "timings", "id", "created", "error"):
            if chunk.get(key) is not None:
                body[key] = chunk[key]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            continue
        choice = choices[0]
        delta = choice.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
            text.append(delta["content"])
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
            tokens.extend(logprobs["content"])
        if choice.get("finish_reason") is not None:
            finish = choice["finish_reason"]
    choice_out: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": "".join(text)},
        "finish_reason": finish,
    }
    if tokens:
        choice_out["logprobs"] = {"content": tokens}
    return {**body, "object": "chat.completion", "choices": [choice_out]}
