"""The word-level rules claims are judged by, on their text alone: whether a claim is
anchored in the sentence it is attached to, whether a non-factual category is trusted,
and whether two claims are one (`veracity.evidence.claims` applies them)."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|nowhere|neither|nor|without|cannot)\b|n't\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NUMBER_WORDS = frozenset(
    _WORD.findall(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
        "eighty ninety hundred thousand million billion trillion first second third fourth "
        "fifth sixth seventh eighth ninth tenth once twice half dozen"
    )
)
_NAME = re.compile(r"\b[A-Z][\w'’-]*")
_OPENERS = frozenset(  # capitalised at a sentence's start, not names
    _WORD.findall(
        "a an the this that these those it its he she his her they their them we our i you "
        "your in on at by for from of to with as after before during since until there here "
        "when while if but and or so some many most all each every one"
    )
)
# function words: left out of a claim's content words when anchoring it (step 4)
_FUNCTION_WORDS = frozenset(
    _WORD.findall(
        "a an the this that these those it its it's he him his she her hers they them their "
        "theirs we us our you your i me my mine who whom whose which what where when why how "
        "is are was were be been being am do does did done has have had having will would "
        "shall should can could may might must of in on at by for from to with without as "
        "into onto about above below over under between among through during before after "
        "since until than then there here and or but nor so yet if because while also too "
        "very not no all any both each every some such other another more most many much "
        "few only own same just one ones s t"
    )
)
ANCHOR_SHARE = 0.5  # of a claim's content words that must be in its sentence + context

_FORM: dict[str, frozenset[str]] = {  # words that show a claim has a category's form
    "opinion": frozenset(
        _WORD.findall(
            "i i'm me my we our think believe feel felt love loved hate like prefer enjoy "
            "opinion personally best worst beautiful lovely ugly amazing awesome great "
            "terrible wonderful boring interesting favourite favorite overrated underrated"
        )
    ),
    "advice": frozenset(
        _WORD.findall(
            "you your should shouldn't must ought recommend recommended try consider avoid "
            "remember please let's"
        )
    ),
}


def confident_not_factual(claim: str, category: str) -> bool:
    """Whether a claim the model put in the non-factual `category` is left unchecked.

    The model's category is trusted ("confident") only when a second signal agrees: the
    claim names nothing checkable (no number, date or number word, see `_facts_of`, and
    no capitalised word after its first), or its wording has the category's form: a
    ``question`` ends with ``?``; an ``opinion`` has a first-person or judging word ("I",
    "think", "love", "best"); ``advice`` a word that tells or advises ("you", "should",
    "recommend", "avoid"). ``trivial`` has no such form. So a plain fact the model called
    advice ("Marie Curie was born in Warsaw.") is checked, "I love Paris." is not."""
    if category == "factual":
        return False
    if category == "question" and claim.rstrip().endswith("?"):
        return True
    if _FORM.get(category, frozenset()) & set(_WORD.findall(claim.lower())):
        return True
    _, numbers, _ = _facts_of(claim)
    # a name: a capitalised word other than the claim's first ("Drink more water." has none)
    names = [m for m in _NAME.finditer(claim.strip()) if m.start() > 0]
    return not numbers and not any(m.group(0).lower() not in _OPENERS for m in names)


def _stem(word: str) -> str:
    """A light suffix stripper (plurals, -ing, -ed, -ly): "prizes" and "prize", "awarded"
    and "award" meet; irregular forms ("won", "wins") do not."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, repl, keep in (
        ("ies", "y", 3), ("sses", "ss", 3), ("ing", "", 4), ("ed", "", 4), ("ly", "", 4),
    ):  # fmt: skip
        if word.endswith(suffix) and len(word) - len(suffix) >= keep:
            return word[: -len(suffix)] + repl
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> tuple[set[str], set[str]]:
    """(content words, numbers) of `text`: lower-cased stemmed words less function words
    (digits left out), and its numbers and dates with thousands separators removed."""
    numbers = {n.replace(",", "") for n in _NUMBER.findall(text)}
    words = {
        _stem(w)
        for w in _WORD.findall(text.lower())
        if w not in _FUNCTION_WORDS and not any(ch.isdigit() for ch in w)
    }
    return words, numbers


def anchored(claim: str, sentence: str, context: str = "") -> bool:
    """Whether `claim` is anchored in `sentence` (see the module docstring): one of its
    content words or numbers is in the sentence, at least `ANCHOR_SHARE` of its content
    words are in the sentence or its `context` (window, question), and all its numbers."""
    words, numbers = content_words(claim)
    if not words and not numbers:
        return False  # nothing of the text in it
    in_sentence, sentence_numbers = content_words(sentence)
    around, around_numbers = content_words(context)
    if not (words & in_sentence or numbers & sentence_numbers):
        return False
    if not numbers <= sentence_numbers | around_numbers:
        return False
    if not words:
        return True
    return len(words & (in_sentence | around)) / len(words) >= ANCHOR_SHARE


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of two texts' lower-cased word sets (1.0 for two empty texts)."""
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def _facts_of(text: str) -> tuple[list[str], set[str], set[str]]:
    """What two claims must share to be one: their negations, numbers and dates (digits
    and number words), and names (capitalised words other than sentence openers)."""
    negations = sorted(m.group(0).lower() for m in _NEGATION.finditer(text))
    words = _WORD.findall(text.lower())
    numbers = set(_NUMBER.findall(text)) | {w for w in words if w in _NUMBER_WORDS}
    names = {m.group(0).lower() for m in _NAME.finditer(text)} - _OPENERS
    return negations, numbers, names


def same_claim(a: str, b: str, threshold: float) -> bool:
    """Whether `b` repeats `a`: their words overlap at or above `threshold` and they agree
    on every negation, number, date and name (`_facts_of`)."""
    if word_overlap(a, b) < threshold:
        return False
    return _facts_of(a) == _facts_of(b)
