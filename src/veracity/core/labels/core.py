"""Label spaces used by the papers, the registries, and explicit mappings between them.

A `LabelSpace` is an ordered set of labels with a veracity score per label (1.0 = true,
0.0 = false) so that any verdict can be placed on one [0, 1] scale. Spaces defined by
score cut-offs (ToE's true / uncertain / false) also map a score back to a label.
Mappings between spaces are explicit tables: nothing is guessed from label names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from veracity.core.errors import LabelError


def _norm(label: str) -> str:
    return re.sub(r"[\s_\-]+", "-", label.strip().lower())


class LabelSpace(BaseModel):
    """An ordered set of labels.

    Attributes:
        name: registry key, e.g. "real_fake".
        labels: the canonical spelling of each label.
        scores: veracity score of each label in [0, 1].
        descriptions: what each label means (shown to LLMs in prompts).
        cutoffs: for score-defined spaces, the upper bound (exclusive) of each label's
            score band in ascending score order; the last label takes the rest.
        aliases: extra spellings accepted by `parse` (normalised, lower-case).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    labels: tuple[str, ...]
    scores: Mapping[str, float]
    descriptions: Mapping[str, str] = Field(default_factory=dict)
    cutoffs: tuple[tuple[str, float], ...] | None = None
    aliases: Mapping[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> LabelSpace:
        if set(self.scores) != set(self.labels):
            raise ValueError(f"{self.name}: every label needs a score")
        if len({_norm(x) for x in self.labels}) != len(self.labels):
            raise ValueError(f"{self.name}: labels collide after normalisation")
        return self

    def __contains__(self, label: object) -> bool:
        return isinstance(label, str) and self.find(label) is not None

    def find(self, text: str) -> str | None:
        """The canonical label `text` names (case, spaces and dashes ignored), or None."""
        key = _norm(text)
        for label in self.labels:
            if _norm(label) == key:
                return label
        alias = self.aliases.get(key)
        return alias

    def parse(self, text: str) -> str:
        """Like `find` but raises `LabelError` when `text` is not a label of this space."""
        found = self.find(text)
        if found is None:
            raise LabelError(f"{text!r} is not a label of {self.name} {list(self.labels)}")
        return found

    def score(self, label: str) -> float:
        return self.scores[self.parse(label)]

    def from_score(self, score: float) -> str:
        """The label whose score band holds `score` (score-defined spaces only)."""
        if self.cutoffs is None:
            raise LabelError(f"{self.name} is not defined by score cut-offs")
        if not 0.0 <= score <= 1.0:
            raise LabelError(f"veracity score {score} is outside [0, 1]")
        for label, upper in self.cutoffs:
            if score < upper:
                return label
        return self.cutoffs[-1][0]

    def literal(self) -> Any:
        """A `typing.Literal` of the labels, for output models and JSON schemas."""
        return Literal[self.labels]  # type: ignore[valid-type]

    def expected_score(self, probs: Mapping[str, float]) -> float:
        """Veracity score expected under a distribution over labels."""
        total = sum(probs.values())
        if total <= 0:
            raise LabelError("probabilities sum to zero")
        return sum(self.score(label) * p for label, p in probs.items()) / total

    def describe(self) -> str:
        """One line per label, for prompts."""
        return "\n".join(
            f"- {label}: {self.descriptions.get(label, '')}".rstrip(": ") for label in self.labels
        )


def space_from_table(name: str, table: list[tuple[str, float, str]], **kw: Any) -> LabelSpace:
    """A label space from (label, veracity score, description) rows."""
    return LabelSpace(
        name=name,
        labels=tuple(t[0] for t in table),
        scores={t[0]: t[1] for t in table},
        descriptions={t[0]: t[2] for t in table},
        **kw,
    )


REAL_FAKE = space_from_table(
    "real_fake",
    [
        ("REAL", 1.0, "the news is genuine and its content is accurate"),
        ("FAKE", 0.0, "the news is fabricated or materially misleading"),
    ],
    aliases={"true": "REAL", "fake-news": "FAKE", "false": "FAKE"},
)
TRUE_HALF_FALSE = space_from_table(
    "true_half_false",
    [
        ("TRUE", 1.0, "accurate, with nothing significant left out"),
        ("HALF-TRUE", 0.5, "partly accurate but leaves out or distorts important context"),
        ("FALSE", 0.0, "not accurate"),
    ],
    aliases={"half": "HALF-TRUE", "halftrue": "HALF-TRUE"},
)
# ToE maps its final veracity score v to three labels: v < 0.4 false,
# 0.4 <= v <= 0.6 uncertain, v > 0.6 true.
TRUE_UNCERTAIN_FALSE = space_from_table(
    "true_uncertain_false",
    [
        ("true", 1.0, "the evidence shows the claim is true"),
        ("uncertain", 0.5, "the evidence does not settle the claim"),
        ("false", 0.0, "the evidence shows the claim is false"),
    ],
    cutoffs=(("false", 0.4), ("uncertain", 0.6000001), ("true", 1.0)),
)
SUPPORTED_REFUTED_NEI = space_from_table(
    "supported_refuted_nei",
    [
        ("SUPPORTED", 1.0, "the evidence supports the claim"),
        ("REFUTED", 0.0, "the evidence contradicts the claim"),
        ("NEI", 0.5, "there is not enough information to decide"),
    ],
    aliases={
        "supports": "SUPPORTED",
        "support": "SUPPORTED",
        "refutes": "REFUTED",
        "refute": "REFUTED",
        "contradict": "REFUTED",
        "not-enough-info": "NEI",
        "not-enough-information": "NEI",
        "not-enough-evidence": "NEI",
        "notenoughinfo": "NEI",
    },
)
SUPPORTED_REFUTED = space_from_table(
    "supported_refuted",
    [
        ("SUPPORTED", 1.0, "the evidence supports the claim"),
        ("REFUTED", 0.0, "the evidence contradicts the claim"),
    ],
    aliases={
        "supports": "SUPPORTED",
        "support": "SUPPORTED",
        "refutes": "REFUTED",
        "refute": "REFUTED",
        "contradict": "REFUTED",
        "not-supported": "REFUTED",
    },
)
TRUE_FALSE = space_from_table(
    "true_false",
    [
        ("true", 1.0, "the statement is factually correct"),
        ("false", 0.0, "the statement contains a factual error"),
    ],
)
RUMOR = space_from_table(
    "rumor",
    [
        ("rumor", 0.0, "the post spreads an unverified or false story"),
        ("non-rumor", 1.0, "the post is not a rumor"),
    ],
    aliases={"nonrumor": "non-rumor", "not-rumor": "non-rumor", "rumour": "rumor"},
)
RUMOR_VERACITY = space_from_table(
    "rumor_veracity",
    [
        ("true", 1.0, "the story turned out to be true"),
        ("false", 0.0, "the story turned out to be false"),
        ("unverified", 0.5, "the story was never confirmed or denied"),
    ],
)
LIAR6 = space_from_table(
    "liar6",
    [
        ("true", 1.0, "accurate, nothing significant missing"),
        ("mostly-true", 0.8, "accurate but needs clarification"),
        ("half-true", 0.6, "partially accurate, leaves out important details"),
        ("barely-true", 0.4, "contains an element of truth but ignores critical facts"),
        ("false", 0.2, "not accurate"),
        ("pants-fire", 0.0, "not accurate and makes a ridiculous claim"),
    ],
    aliases={"mostly-false": "barely-true", "pants-on-fire": "pants-fire"},
)

LABEL_SPACES: dict[str, LabelSpace] = {
    s.name: s
    for s in (
        REAL_FAKE,
        TRUE_HALF_FALSE,
        TRUE_UNCERTAIN_FALSE,
        SUPPORTED_REFUTED_NEI,
        SUPPORTED_REFUTED,
        TRUE_FALSE,
        RUMOR,
        RUMOR_VERACITY,
        LIAR6,
    )
}


def get_label_space(name: str | LabelSpace) -> LabelSpace:
    if isinstance(name, LabelSpace):
        return name
    try:
        return LABEL_SPACES[name]
    except KeyError:
        raise LabelError(f"unknown label space {name!r}; known: {sorted(LABEL_SPACES)}") from None


def register_label_space(space: LabelSpace) -> LabelSpace:
    if space.name in LABEL_SPACES and LABEL_SPACES[space.name] != space:
        raise LabelError(f"label space {space.name!r} is already registered differently")
    LABEL_SPACES[space.name] = space
    return space


# --------------------------------------------------------------------------- mappings


class LabelMap(BaseModel):
    """An explicit table from the labels of one space to the labels of another."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    source: str
    target: str
    table: Mapping[str, str]
    note: str = ""

    @model_validator(mode="after")
    def _check(self) -> LabelMap:
        src, dst = get_label_space(self.source), get_label_space(self.target)
        if set(self.table) != set(src.labels):
            missing = set(src.labels) - set(self.table)
            raise ValueError(f"{self.name}: source labels not mapped: {sorted(missing)}")
        bad = [v for v in self.table.values() if v not in dst.labels]
        if bad:
            raise ValueError(f"{self.name}: targets not in {dst.name}: {bad}")
        return self

    def __call__(self, label: str) -> str:
        return self.table[get_label_space(self.source).parse(label)]


def _map(name: str, source: str, target: str, table: dict[str, str], note: str = "") -> LabelMap:
    return LabelMap(name=name, source=source, target=target, table=table, note=note)


LABEL_MAPS: dict[str, LabelMap] = {
    m.name: m
    for m in (
        _map(
            "liar6_to_toe3",
            "liar6",
            "true_uncertain_false",
            {
                "true": "true",
                "mostly-true": "true",
                "half-true": "uncertain",
                "barely-true": "false",
                "false": "false",
                "pants-fire": "false",
            },
            "ToE: pants-fire, false, barely-true/mostly-false -> false; half-true -> uncertain",
        ),
        _map(
            "liar6_to_tracer3",
            "liar6",
            "true_half_false",
            {
                "true": "TRUE",
                "mostly-true": "HALF-TRUE",
                "half-true": "HALF-TRUE",
                "barely-true": "FALSE",
                "false": "FALSE",
                "pants-fire": "FALSE",
            },
            "TRACER / RADAR: mostly-true and half-true -> HALF-TRUE",
        ),
        _map(
            "liar6_to_binary",
            "liar6",
            "true_false",
            {
                "true": "true",
                "mostly-true": "true",
                "half-true": "true",
                "barely-true": "false",
                "false": "false",
                "pants-fire": "false",
            },
            "common binary split of LIAR: half-true and above -> true",
        ),
        _map(
            "fever3_to_toe3",
            "supported_refuted_nei",
            "true_uncertain_false",
            {"SUPPORTED": "true", "REFUTED": "false", "NEI": "uncertain"},
            "ToE on Check-COVID: SUPPORT -> true, REFUTE -> false, NOTENOUGHINFO -> uncertain",
        ),
        _map(
            "fever2_to_true_false",
            "supported_refuted",
            "true_false",
            {"SUPPORTED": "true", "REFUTED": "false"},
        ),
        _map(
            "true_false_to_fever2",
            "true_false",
            "supported_refuted",
            {"true": "SUPPORTED", "false": "REFUTED"},
        ),
        _map(
            "real_fake_to_true_false",
            "real_fake",
            "true_false",
            {"REAL": "true", "FAKE": "false"},
        ),
        _map(
            "true_false_to_real_fake",
            "true_false",
            "real_fake",
            {"true": "REAL", "false": "FAKE"},
        ),
        _map(
            "rumor_veracity_to_rumor",
            "rumor_veracity",
            "rumor",
            {"true": "non-rumor", "false": "rumor", "unverified": "rumor"},
            "RumourEval veracity -> rumor detection: false and unverified stories count as "
            "rumors, confirmed-true ones as non-rumors (our convention; stated in reports)",
        ),
        _map(
            "true_half_false_to_toe3",
            "true_half_false",
            "true_uncertain_false",
            {"TRUE": "true", "HALF-TRUE": "uncertain", "FALSE": "false"},
            "PolitiFact-Hidden (TRACER labels) read in ToE's space",
        ),
        _map(
            "toe3_to_true_half_false",
            "true_uncertain_false",
            "true_half_false",
            {"true": "TRUE", "uncertain": "HALF-TRUE", "false": "FALSE"},
        ),
    )
}


def get_label_map(source: str, target: str) -> LabelMap:
    """The registered map from `source` space to `target` space."""
    for m in LABEL_MAPS.values():
        if m.source == source and m.target == target:
            return m
    raise LabelError(f"no label map from {source!r} to {target!r}; register one explicitly")


def register_label_map(mapping: LabelMap) -> LabelMap:
    LABEL_MAPS[mapping.name] = mapping
    return mapping


def map_label(label: str, source: str, target: str) -> str:
    """Map `label` from one space to another through a registered table."""
    if source == target:
        return get_label_space(source).parse(label)
    return get_label_map(source, target)(label)
