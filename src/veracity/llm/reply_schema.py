"""Field types for reply models whose every constraint the constrained decoder can see.

A reply model is a pydantic model whose JSON schema is sent with a request for structured
output (`veracity.llm.structured`). Constrained decoding can only keep to what that
schema says; a validator the schema does not express rejects replies the decoder was
told were fine, and the re-ask fails the same way every time. So every check a reply
model makes must either be written into its JSON schema, or repair the value instead of
rejecting it.

The embedded model decodes through llguidance (`veracity.llm.grammar`), which enforces
all of these; a llama.cpp server behind the OpenAI-compatible client, and the embedded
model for a schema llguidance did not take, use llama.cpp's JSON-schema-to-grammar
converter, which enforces string lengths, enums, array sizes and integer bounds, but
ignores the bounds of non-integer numbers and, for a string with a ``pattern``, its
``minLength`` and ``maxLength``. The rules here are that converter's, so that a reply
model holds under both: it takes patterns anchored with ``^`` and ``$``, built from literal
characters, character classes, groups, alternation and quantifiers (no ``.``, no
``\\w``-style escapes, no look-around), and copies a class into the grammar unchanged,
so a class must exclude the characters a JSON string cannot hold unescaped.

This module's helpers follow those rules:

- `short_name`: a name of a few words of letters (a domain, an expert), as a pattern;
- `phrase`: free text that starts with a word character, as a pattern that also bounds
  its length;
- `whole_number_schema`: a number field the model is asked to give as a whole number in
  a range, which the decoder enforces;
- `clamped`: a number in a range that is clamped into it rather than rejected;
- `schema_safe`: marks a validator that rejects nothing its field's schema allows.

``tests/unit/test_reply_models.py`` checks every reply model of the package against
these rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema

F = TypeVar("F", bound=Callable[..., Any])

SCHEMA_SAFE = "__veracity_schema_safe__"


def schema_safe(func: F) -> F:
    """Mark a validator as one that rejects no value its field's JSON schema allows.

    It may normalise values (strip, collapse spaces, clamp); any value it rejects must
    also be invalid under the JSON schema the decoder is given. The reply-model test
    checks this on values generated from the schema.
    """
    setattr(func, SCHEMA_SAFE, True)
    return func


# A character a JSON string may hold unescaped in llama.cpp's grammar: not '"', not '\'
# and not a control character.
_PLAIN = r'"\\\x00-\x1F\x7F'
# White space (every character `str.split()` splits on) and C1 control characters.
_SPACE = r"\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"


def phrase_pattern(max_chars: int, strip: str = ".,;:") -> str:
    """A pattern for text of at most `max_chars` characters whose first character is
    neither white space nor one of `strip` (so a cleaner that strips those characters
    and white space never leaves it empty)."""
    if max_chars < 1 or any(c in strip for c in "]\\^-"):
        raise ValueError("max_chars must be at least 1; strip no ']', '\\', '^' or '-'")
    first = f'[^{strip}"\\\\{_SPACE}]'  # _SPACE holds the control characters
    return f"^{first}[^{_PLAIN}]{{0,{max_chars - 1}}}$"


def phrase(max_chars: int, *, description: str | None = None) -> Any:
    """A string field of at most `max_chars` characters that starts with a word character
    (see `phrase_pattern`): use it where a validator strips separators and white space
    and rejects what is left empty."""
    extra = {"pattern": phrase_pattern(max_chars)}
    return Field(max_length=max_chars, description=description, json_schema_extra=extra)


_JUNK = re.compile(r"[^\w'’-]|[\d_]")
_JOINERS = re.compile(r"['’-]{2,}")


def _name_word(token: str) -> str:
    """A token reduced to letters with single hyphens or apostrophes between them."""
    return _JOINERS.sub("-", _JUNK.sub("", token)).strip("'’-")


def short_name(max_words: int = 3, max_chars: int = 60) -> Any:
    """A string type for names a model gives (a domain, an expert): at most `max_words`
    words of letters (hyphens and apostrophes inside a word, ``&`` between words), one
    line, at most `max_chars` characters.

    Such a value is shown in later prompts without a fence, so it must not be able to
    carry an instruction. The JSON schema spells this out as a pattern (ASCII letters,
    at most `max_words` words of up to ``(max_chars - 3 * (max_words - 1)) //
    max_words`` letters), so constrained decoding writes a valid name. A reply from a
    backend that does not constrain decoding is repaired where that is safe: digits and
    punctuation are dropped from each word ("Cole," becomes "Cole"); it is rejected only
    when no word is left, or there are too many words or characters.
    """
    letters = (max_chars - 3 * (max_words - 1)) // max(max_words, 1)
    if max_words < 1 or letters < 8:
        raise ValueError("give room for at least one word of 8 letters per word")
    word = f"[A-Za-z][A-Za-z'-]{{0,{letters - 1}}}"
    pattern = f"^{word}(?: (?:& )?{word}){{0,{max_words - 1}}}$"
    schema = {"type": "string", "pattern": pattern, "minLength": 1, "maxLength": max_chars}

    @schema_safe
    def check(value: str) -> str:
        tokens = [t if t == "&" else _name_word(t) for t in value.split()]
        tokens = [t for t in tokens if t]
        while tokens and tokens[0] == "&":
            tokens.pop(0)
        while tokens and tokens[-1] == "&":
            tokens.pop()
        words = [t for t in tokens if t != "&"]
        name = " ".join(t for i, t in enumerate(tokens) if t != "&" or tokens[i - 1] != "&")
        if not words:
            raise ValueError("the name must be made of letters")
        if len(words) > max_words or len(name) > max_chars:
            raise ValueError(f"give a name of at most {max_words} words")
        return name

    return Annotated[str, AfterValidator(check), WithJsonSchema(schema)]


def whole_number_schema(low: int, high: int) -> Callable[[dict[str, Any]], None]:
    """A ``json_schema_extra`` that asks for a whole number in [low, high] (a bound the
    embedded decoder enforces; it ignores the bounds of other numbers). The field itself
    may still accept any number its own constraints allow."""

    def update(schema: dict[str, Any]) -> None:
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            schema.pop(key, None)
        schema.update(type="integer", minimum=low, maximum=high)

    return update


def clamped(low: float, high: float, *, description: str | None = None) -> Any:
    """A number in [low, high]; a number outside is clamped into the range, not rejected
    (the embedded decoder does not enforce the bounds of non-integer numbers)."""

    @schema_safe
    def clamp(value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return min(max(value, low), high)
        return value

    return Annotated[float, Field(ge=low, le=high, description=description), BeforeValidator(clamp)]


__all__ = [
    "SCHEMA_SAFE",
    "clamped",
    "phrase",
    "phrase_pattern",
    "schema_safe",
    "short_name",
    "whole_number_schema",
]
