"""Text that shows nothing is empty (`veracity.core.textio.is_blank`), for every input type."""

from __future__ import annotations

import pytest

import veracity
from veracity.core.errors import InputError
from veracity.core.textio import is_blank
from veracity.core.types import Article, Claim, Post


@pytest.mark.parametrize(
    ("text", "blank"),
    [
        ("", True),
        ("  \n\t", True),
        ("\u200b", True),  # zero-width space
        ("\u2060\u2060", True),  # word joiner
        ("\ufeff", True),  # byte-order mark
        ("\u00ad\u200c\u200d", True),  # soft hyphen, zero-width (non-)joiner
        ("\u3164\uffa0", True),  # Hangul and half-width fillers
        ("\U000e0001\U000e0068", True),  # tag characters
        ("\ufe0f\U000e0100", True),  # variation selectors
        ("\u202e\u2066", True),  # bidirectional controls
        ("\u2800", True),  # Braille blank
        ("a", False),
        ("\u200bx\u200b", False),
        ("\u0301", False),  # a combining mark alone still draws
        ("\U0001f600", False),
    ],
)
def test_is_blank(text, blank):
    assert is_blank(text) is blank


@pytest.mark.parametrize(
    "build",
    [
        lambda t: Claim(text=t),
        lambda t: Article(title="A title", body=t),
        lambda t: Post(text=t, replies=["a reply"]),
    ],
)
def test_every_input_type_refuses_invisible_text(build):
    with pytest.raises(ValueError, match="only invisible characters"):
        build("\u200b\u2060\ufeff")
    assert build("\u200bWater boils.")  # invisible characters inside text are kept


def test_the_python_api_refuses_it_before_any_model_call():
    with pytest.raises(InputError, match="claim text is empty"):
        veracity.as_input("\u2060 \u200b")
