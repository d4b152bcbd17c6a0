"""Probabilities of a discrete answer (a label, STOP/CONTINUE) from an LLM reply.

Two estimators:

- `choice_probabilities` reads the log-probabilities of the answer's first token and its
  top alternatives. Tokens are matched to choices by case-insensitive prefix after
  stripping whitespace and quotes, so " STOP", "ST" and "stop" all count for STOP.
- `sampled_choice_probabilities` is for backends without logprobs: it samples k answers
  and uses their frequencies. Callers must say in the trace which estimator was used.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from veracity.llm.base import LLMResponse, TokenLogprob

_STRIP = " \t\n\r\"'`*:.,()[]{}"


@dataclass(frozen=True)
class ChoiceProbs:
    """A distribution over choices.

    Attributes:
        probs: probability per choice, summing to 1 over the choices.
        mass: probability mass of the answer position that matched any choice (logprob
            estimator), or the fraction of usable samples (sampling estimator).
        method: "logprobs" or "sampling".
        samples: number of samples (sampling estimator only).
    """

    probs: dict[str, float]
    mass: float
    method: str
    samples: int = 0

    def __post_init__(self) -> None:
        bad = {c: p for c, p in self.probs.items() if not (math.isfinite(p) and 0 <= p <= 1)}
        if bad or not (math.isfinite(self.mass) and 0 <= self.mass <= 1):
            raise ValueError(f"not a probability distribution: {self.probs} (mass {self.mass})")

    @property
    def best(self) -> str:
        return max(self.probs, key=self.probs.__getitem__)

    @property
    def confidence(self) -> float:
        return self.probs[self.best]


def _matches(token: str, choice: str) -> bool:
    t = token.strip(_STRIP).lower()
    return bool(t) and choice.lower().startswith(t)


def _answer_index(tokens: list[TokenLogprob], field: str | None) -> int | None:
    """Index of the token that starts the answer.

    Offsets are computed on the concatenated tokens, not on the reply text: some servers
    post-process the text (llama.cpp strips a code fence around constrained JSON), so
    the two need not line up.
    """
    if field is not None:
        joined = "".join(t.token for t in tokens)
        m = re.search(rf'"{re.escape(field)}"\s*:\s*"?', joined)
        if m is None:
            return None
        target, offset = m.end(), 0
        for i, tok in enumerate(tokens):
            end = offset + len(tok.token)
            if end > target and tok.token[max(0, target - offset) :].strip(_STRIP):
                return i
            offset = end
        return None
    for i, tok in enumerate(tokens):
        if tok.token.strip(_STRIP):
            return i
    return None


def choice_probabilities(
    response: LLMResponse, choices: Sequence[str], *, field: str | None = None
) -> ChoiceProbs | None:
    """Distribution over `choices` at the answer's first token.

    Args:
        response: a reply requested with ``logprobs=True`` and ``top_logprobs`` > 0.
        choices: the possible answers.
        field: for JSON replies, the key whose value is the answer; otherwise the first
            non-blank token is taken as the answer.

    Returns:
        None when the reply has no logprobs or no matching alternative; the caller then
        falls back to sampling.
    """
    if not response.logprobs:
        return None
    idx = _answer_index(response.logprobs, field)
    if idx is None:
        return None
    tok = response.logprobs[idx]
    alternatives = tok.top or []
    if not any(a.token == tok.token for a in alternatives):
        alternatives = [*alternatives, tok]  # the chosen token is always a candidate
    mass: dict[str, float] = dict.fromkeys(choices, 0.0)
    for alt in alternatives:
        hits = [c for c in choices if _matches(alt.token, c)]
        if len(hits) == 1:  # a token shared by several choices says nothing between them
            mass[hits[0]] += math.exp(alt.logprob)
    total = sum(mass.values())
    if not math.isfinite(total) or total <= 0:  # never a NaN read as a probability
        return None
    return ChoiceProbs(
        probs={c: p / total for c, p in mass.items()}, mass=min(total, 1.0), method="logprobs"
    )


async def sampled_choice_probabilities(
    sample: Callable[[int], Awaitable[str | None]], choices: Sequence[str], k: int
) -> ChoiceProbs:
    """Estimate a distribution over `choices` from k sampled answers.

    Args:
        sample: coroutine factory; `sample(i)` returns the i-th sampled answer (already
            parsed to a choice, or None when the sample was unusable).
        choices: the possible answers.
        k: number of samples.

    Raises:
        ValueError: when none of the k samples named a choice.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    import asyncio

    answers = await asyncio.gather(*(sample(i) for i in range(k)))
    counts = Counter(a for a in answers if a in choices)
    usable = sum(counts.values())
    if usable == 0:
        raise ValueError(f"none of {k} sampled answers named one of {list(choices)}")
    return ChoiceProbs(
        probs={c: counts[c] / usable for c in choices},
        mass=usable / k,
        method="sampling",
        samples=k,
    )
