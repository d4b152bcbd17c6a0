"""Label spaces and maps that only the benchmark sets need.

Registered on import of `veracity.core.labels`.
Sets whose labels mean the same as a space in `veracity.core.labels` reuse it, with the raw
label kept in `Example.metadata["original_label"]`: SciFact and Check-COVID
(SUPPORT / CONTRADICT or REFUTE / NEI -> supported_refuted_nei), HoVer, FEVEROUS-S and
COVID-Fact (-> supported_refuted), LIAR (liar6), PolitiFact-Hidden (true_half_false),
the news sets (real_fake), RumourEval (rumor_veracity).
"""

from __future__ import annotations

from typing import Any

from veracity.core.labels.core import (
    LabelMap,
    LabelSpace,
    register_label_map,
    register_label_space,
    space_from_table,
)


def _space(name: str, table: list[tuple[str, float, str]], **kw: Any) -> LabelSpace:
    return register_label_space(space_from_table(name, table, **kw))


AVERITEC = _space(
    "averitec",
    [
        ("Supported", 1.0, "the evidence backs the claim"),
        ("Refuted", 0.0, "the evidence shows the claim is wrong"),
        ("Not Enough Evidence", 0.5, "the evidence found cannot settle the claim"),
        (
            "Conflicting Evidence/Cherrypicking",
            0.5,
            "the evidence points both ways, or the claim is true only by picking facts selectively",
        ),
    ],
    aliases={
        "not-enough-info": "Not Enough Evidence",
        "nee": "Not Enough Evidence",
        "conflicting-evidence/cherry-picking": "Conflicting Evidence/Cherrypicking",
        "conflicting": "Conflicting Evidence/Cherrypicking",
        "cherrypicking": "Conflicting Evidence/Cherrypicking",
    },
)

# AVeriTeC without its "Not Enough Evidence" class: the three classes RADAR scores
# (true / half-true / false); the loader variant drops NEE claims and counts them.
AVERITEC3 = _space(
    "averitec3",
    [
        ("Supported", 1.0, "the evidence backs the claim"),
        ("Refuted", 0.0, "the evidence shows the claim is wrong"),
        (
            "Conflicting Evidence/Cherrypicking",
            0.5,
            "the evidence points both ways, or the claim is true only by picking facts selectively",
        ),
    ],
    aliases=dict(AVERITEC.aliases),
)

CLIMATE_FEVER = _space(
    "climate_fever",
    [
        ("SUPPORTS", 1.0, "the evidence sentences back the claim"),
        ("REFUTES", 0.0, "the evidence sentences contradict the claim"),
        ("NOT_ENOUGH_INFO", 0.5, "the evidence sentences do not bear on the claim"),
        ("DISPUTED", 0.5, "some evidence backs the claim and some contradicts it"),
    ],
    aliases={"nei": "NOT_ENOUGH_INFO", "supported": "SUPPORTS", "refuted": "REFUTES"},
)

TRUE_FALSE_NEE = _space(
    "true_false_nee",
    [
        ("true", 1.0, "the statement is factually correct"),
        ("false", 0.0, "the statement contains a factual error"),
        ("not_enough_evidence", 0.5, "the evidence available does not decide the statement"),
    ],
    aliases={"nee": "not_enough_evidence", "not-enough-info": "not_enough_evidence"},
)

BINGCHECK4 = _space(
    "bingcheck4",
    [
        ("supported", 1.0, "the evidence backs the whole claim"),
        ("partially supported", 0.75, "the evidence backs part of the claim"),
        ("not supported", 0.5, "no evidence was found for the claim"),
        ("refuted", 0.0, "the evidence contradicts the claim"),
    ],
)

AVERITEC3_TO_RADAR3 = register_label_map(
    LabelMap(
        name="averitec3_to_radar3",
        source="averitec3",
        target="true_half_false",
        table={
            "Supported": "TRUE",
            "Conflicting Evidence/Cherrypicking": "HALF-TRUE",
            "Refuted": "FALSE",
        },
        note="RADAR on AVeriTeC: conflicting/cherry-picking is the half-true class; "
        "the paper does not say how Not Enough Evidence claims were treated, we drop them",
    )
)
