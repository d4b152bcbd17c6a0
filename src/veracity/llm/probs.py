"""Probabilities of a discrete answer (a label, STOP/CONTINUE) from an LLM reply.

Two estimators:

- `choice_probabilities` reads the log-probabilities of the answer's first token and its
  top alternatives. Tokens are matched to choices by case-insensitive prefix after
  stripping whitespace and quotes, so " STOP", "ST" and "stop" all count for STOP —
  unless the reply was decoded under a JSON schema that spells the choices exactly
  (``exact=True``): backends report the alternatives *before* the schema's grammar
  applies, so alternatives the grammar forbids at that position ("False" where only
  "false" may follow, "The", a value without its opening quote) are left out, and the
  distribution is over the tokens the schema allows.
- `sampled_choice_probabilities` is for backends without logprobs: it samples k answers
  and uses their frequencies. Callers must say in the trace which estimator was used.

`most_probable` is the one rule for which answer a distribution decides: the most
probable one; where several share the top probability, the tie is reported and broken by
the model's own answer when it is among them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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


TIE_TOLERANCE = 1e-9  # probabilities this close count as equal


def most_probable(
    probs: Mapping[str, float], answer: str | None = None
) -> tuple[str, tuple[str, ...]]:
    """The answer a distribution decides, and the answers tied at the top.

    Args:
        probs: answer -> probability (not empty).
        answer: the model's own (decoded) answer; it breaks a tie it takes part in.

    Returns:
        (decided answer, tied answers): the tuple is empty when one answer leads; with a
        tie the decided answer is `answer` when it is tied, else the first tied answer in
        the mapping's order.
    """
    if not probs:
        raise ValueError("an empty distribution decides nothing")
    top = max(probs.values())
    tied = tuple(c for c, p in probs.items() if top - p <= TIE_TOLERANCE)
    if len(tied) == 1:
        return tied[0], ()
    return (answer if answer in tied else tied[0]), tied


def normalised(probs: Mapping[str, float], keep: Sequence[str]) -> dict[str, float] | None:
    """`probs` restricted to `keep` (in that order) and scaled to sum to 1; None when no
    probability is left (nothing readable)."""
    kept = {k: max(0.0, float(probs.get(k, 0.0))) for k in keep}
    total = sum(kept.values())
    if total <= 0 or not math.isfinite(total):
        return None
    return {k: v / total for k, v in kept.items()}


def schema_choices(schema: dict[str, Any], field: str) -> frozenset[str] | None:
    """The strings a JSON schema allows for its top-level property `field`.

    Reads ``enum``, ``const`` and an ``anyOf``/``oneOf`` of them (following local
    ``$ref``s, as pydantic writes `Literal` and `Enum` fields); None when the field may
    take other values (any string, a pattern, a number).
    """
    defs = schema.get("$defs", {})

    def allowed(node: Any) -> frozenset[str] | None:
        if not isinstance(node, dict):
            return None
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return allowed(defs.get(ref.removeprefix("#/$defs/")))
        if "const" in node:
            node = {"enum": [node["const"]]}
        if "enum" in node:
            values = node["enum"]
            ok = isinstance(values, list) and values and all(isinstance(v, str) for v in values)
            return frozenset(values) if ok else None
        branches = node.get("anyOf") or node.get("oneOf")
        if isinstance(branches, list) and branches:
            parts = [allowed(b) for b in branches]
            if any(p is None for p in parts):
                return None
            return frozenset().union(*parts)  # type: ignore[arg-type]
        return None

    return allowed(schema.get("properties", {}).get(field))


def _matches(token: str, choice: str) -> bool:
    t = token.strip(_STRIP).lower()
    return bool(t) and choice.lower().startswith(t)


def _allowed(token: str, choice: str, quote_open: bool) -> bool:
    """Whether JSON grammar allows `token` to begin the string value `choice` here.

    Before the opening quote only whitespace and the quote may precede the value; after
    it the token must spell the start of the value exactly, or all of it followed by the
    closing quote.
    """
    t = token
    if not quote_open:
        t = t.lstrip(" \t\n\r")
        if not t.startswith('"'):
            return False
        t = t[1:]
    if not t:
        return False
    return choice.startswith(t) or (t.startswith(choice) and t[len(choice) :].startswith('"'))


def _answer_index(tokens: list[TokenLogprob], field: str | None) -> tuple[int, bool] | None:
    """Index of the token that starts the answer, and whether the value's opening quote
    came before that token (in an earlier token).

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
        quote_at = m.end() - 1 if m.group().endswith('"') else None
        for i, tok in enumerate(tokens):
            end = offset + len(tok.token)
            if end > target and tok.token[max(0, target - offset) :].strip(_STRIP):
                return i, quote_at is not None and quote_at < offset
            offset = end
        return None
    for i, tok in enumerate(tokens):
        if tok.token.strip(_STRIP):
            return i, False
    return None


def choice_probabilities(
    response: LLMResponse,
    choices: Sequence[str],
    *,
    field: str | None = None,
    exact: bool = False,
) -> ChoiceProbs | None:
    """Distribution over `choices` at the answer's first token.

    Args:
        response: a reply requested with ``logprobs=True`` and ``top_logprobs`` > 0.
        choices: the possible answers.
        field: for JSON replies, the key whose value is the answer; otherwise the first
            non-blank token is taken as the answer.
        exact: the reply was decoded under a JSON schema whose `field` takes exactly
            these strings (constrained decoding): only alternatives the schema allows
            at the answer position count, matched case-sensitively. Needs `field`.

    Returns:
        None when the reply has no logprobs or no matching alternative; the caller then
        falls back to sampling.
    """
    if not response.logprobs:
        return None
    found = _answer_index(response.logprobs, field)
    if found is None:
        return None
    idx, quote_open = found
    tok = response.logprobs[idx]
    alternatives = tok.top or []
    if not any(a.token == tok.token for a in alternatives):
        alternatives = [*alternatives, tok]  # the chosen token is always a candidate
    strict = exact and field is not None
    mass: dict[str, float] = dict.fromkeys(choices, 0.0)
    for alt in alternatives:
        if strict:
            hits = [c for c in choices if _allowed(alt.token, c, quote_open)]
        else:
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
    sample: Callable[[int], Awaitable[str | None]],
    choices: Sequence[str],
    k: int,
    *,
    in_turn: bool = False,
) -> ChoiceProbs:
    """Estimate a distribution over `choices` from k sampled answers.

    Args:
        sample: coroutine factory; `sample(i)` returns the i-th sampled answer (already
            parsed to a choice, or None when the sample was unusable).
        choices: the possible answers.
        k: number of samples.
        in_turn: draw the samples one after another rather than all at once.

    Raises:
        ValueError: when none of the k samples named a choice.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    import asyncio

    if in_turn:
        answers = [await sample(i) for i in range(k)]
    else:
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
