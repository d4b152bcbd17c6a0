import pytest

from veracity.core.labels import (
    LABEL_MAPS,
    LABEL_SPACES,
    TRUE_UNCERTAIN_FALSE,
    LabelError,
    LabelMap,
    get_label_map,
    get_label_space,
    map_label,
)


def test_parse_is_forgiving_about_case_spaces_and_dashes():
    space = get_label_space("true_half_false")
    assert space.parse("half true") == "HALF-TRUE"
    assert space.parse("Half_True") == "HALF-TRUE"
    assert space.parse(" false ") == "FALSE"
    with pytest.raises(LabelError, match="not a label"):
        space.parse("mostly true")


def test_aliases():
    assert get_label_space("supported_refuted_nei").parse("NOT ENOUGH INFO") == "NEI"
    assert get_label_space("liar6").parse("pants on fire") == "pants-fire"
    assert get_label_space("liar6").parse("mostly-false") == "barely-true"


def test_toe_score_cutoffs():
    # ToE: v < 0.4 false, 0.4 <= v <= 0.6 uncertain, v > 0.6 true
    f = TRUE_UNCERTAIN_FALSE.from_score
    assert [f(x) for x in (0.0, 0.39, 0.4, 0.5, 0.6, 0.61, 1.0)] == [
        "false",
        "false",
        "uncertain",
        "uncertain",
        "uncertain",
        "true",
        "true",
    ]
    with pytest.raises(LabelError):
        f(1.2)
    with pytest.raises(LabelError, match="cut-offs"):
        get_label_space("real_fake").from_score(0.5)


def test_liar_maps_follow_the_papers():
    toe = [map_label(x, "liar6", "true_uncertain_false") for x in LABEL_SPACES["liar6"].labels]
    assert toe == ["true", "true", "uncertain", "false", "false", "false"]
    tracer = [map_label(x, "liar6", "true_half_false") for x in LABEL_SPACES["liar6"].labels]
    assert tracer == ["TRUE", "HALF-TRUE", "HALF-TRUE", "FALSE", "FALSE", "FALSE"]
    assert map_label("mostly-false", "liar6", "true_uncertain_false") == "false"


def test_every_registered_map_is_total():
    for m in LABEL_MAPS.values():
        src = get_label_space(m.source)
        for label in src.labels:
            assert m(label) in get_label_space(m.target).labels


def test_incomplete_map_is_rejected():
    with pytest.raises(ValueError, match="not mapped"):
        LabelMap(name="bad", source="true_false", target="real_fake", table={"true": "REAL"})


def test_missing_map_is_an_error_not_a_guess():
    with pytest.raises(LabelError, match="no label map"):
        get_label_map("rumor", "liar6")


def test_expected_score_and_literal():
    space = get_label_space("true_half_false")
    assert space.expected_score({"TRUE": 0.5, "HALF-TRUE": 0.5, "FALSE": 0.0}) == 0.75
    assert space.literal().__args__ == ("TRUE", "HALF-TRUE", "FALSE")
