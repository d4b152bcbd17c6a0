"""`EchoBackend`: a picklable recipe for a scripted model that echoes the label an input
names, for engine tests and throughput benchmarks.

Each input says which label the model should answer (``... say:SUPPORTED``), so a test
knows every prediction in advance, whichever process checks it. The recipe is a small
frozen dataclass, so it can be sent to Ray workers, which call it once to build their
own model (`veracity.evaluation.ray_engine.RayEngine`'s ``backend``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from veracity.llm.base import LLMRequest
from veracity.testing.scripted import ScriptedLLM, ScriptedReply

SAY = re.compile(r"say:([A-Za-z][\w-]*)")
_OTHER = {"SUPPORTED": "REFUTED", "REFUTED": "SUPPORTED", "true": "false", "false": "true"}


def echo_reply(request: LLMRequest, confidence: float = 0.8) -> ScriptedReply:
    """``{"label": X}`` for the ``say:X`` in the request, with token alternatives.

    Raises:
        ValueError: the request names no label (the check records the fault).
    """
    prompt = "\n".join(m.content for m in request.messages)
    found = SAY.search(prompt)
    if found is None:
        raise ValueError("the echo model found no say:LABEL in the request")
    label = found.group(1)
    other = _OTHER.get(label)
    alts = {label: confidence, other: 1 - confidence} if other else None
    return ScriptedReply(f'{{"label": "{label}"}}', alternatives=alts, at=label)


@dataclass(frozen=True)
class EchoBackend:
    """Builds a `ScriptedLLM` answering each input with the label it names.

    Attributes:
        latency_s: how long every reply takes (a fixed-latency stand-in for a model).
        confidence: probability given to the named label in the token alternatives.
    """

    latency_s: float = 0.0
    confidence: float = 0.8

    def __call__(self) -> ScriptedLLM:
        confidence = self.confidence

        def reply(request: LLMRequest) -> ScriptedReply:
            return echo_reply(request, confidence)

        return ScriptedLLM(default=reply, latency_s=self.latency_s)


__all__ = ["SAY", "EchoBackend", "echo_reply"]
