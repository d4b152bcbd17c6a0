"""Reading what a caller gives into a check input: the one input rule of every front end.

Text, a mapping (a JSON object, a REST body's input, a batch row made into one) or a
ready `Claim`/`Article`/`Post`/`DocumentText` become an input here (`read_input`), and a
bad one fails with an `InputError` whose message says what is wrong, before any model is
built. A ``document`` (`veracity.documents.DocumentText`) is checked by the composite
document method over the run's claim method (`veracity.runtime.documents`).
The Python API re-exports it as ``veracity.as_input``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import ValidationError

from veracity.core.errors import InputError, problem_text
from veracity.core.textio import MAX_JSON_DEPTH, depth
from veracity.core.types import Article, CheckInput, Claim, Post
from veracity.documents.reading import DocumentText, from_text

InputKind = Literal["claim", "article", "post", "document"]
KINDS: tuple[str, ...] = get_args(InputKind)
Input = CheckInput | DocumentText  # what a check reads

_MODELS: dict[str, type[Claim] | type[Article] | type[Post] | type[DocumentText]] = {
    "claim": Claim,
    "article": Article,
    "post": Post,
    "document": DocumentText,
}
_TEXT_FIELD = {"claim": "text", "article": "body", "post": "text", "document": "text"}
_ONLY_FIELDS: dict[str, set[str]] = {
    "article": {"body", "title", "url", "published_at"},
    "post": {"replies", "author", "created_at"},
    "claim": {"speaker", "context", "evidence", "date"},
}


def infer_kind(item: Mapping[str, Any]) -> InputKind | None:
    """The input kind a mapping's fields belong to alone (``body`` or ``title``: an
    article; ``replies`` or ``author``: a post; ``speaker``, ``evidence``...: a claim), or
    None when they fit more than one kind or none."""
    fits = [k for k, only in _ONLY_FIELDS.items() if only & set(item)]
    return fits[0] if len(fits) == 1 else None  # type: ignore[return-value]


def read_input(item: str | Input | Mapping[str, Any], kind: str = "claim") -> Input:
    """Coerce text or a mapping into a Claim, Article, Post or document (`DocumentText`).

    Plain text becomes a Claim (or an Article body / Post / document text with `kind`;
    a document's text is read as `veracity.documents.from_text` reads it); a mapping
    is validated as the type its ``kind`` key names, else the type its fields show
    (`infer_kind`), else the `kind` argument. A ready input is returned as it is.

    Raises:
        InputError: an unknown kind, a mapping nested too deeply, or an input that does
            not validate (the message names the fields of structured input).
        TypeError: `item` is none of text, a mapping or an input.
    """
    if isinstance(item, Claim | Article | Post | DocumentText):
        return item
    if kind not in KINDS:
        raise InputError(f"unknown input kind {kind!r}; use {_KIND_NAMES}")
    if isinstance(item, str) and kind == "document":
        return from_text(item)
    if isinstance(item, str):
        data: Mapping[str, Any] = {_TEXT_FIELD[kind]: item}
        k: Any = kind
    elif isinstance(item, Mapping):
        data, k = item, item.get("kind") or infer_kind(item) or kind
        if depth(item) > MAX_JSON_DEPTH:
            raise InputError(f"the input is nested too deeply (the limit is {MAX_JSON_DEPTH})")
    else:
        raise TypeError(
            f"cannot check a {type(item).__name__}; give text, a Claim, Article, Post or "
            "DocumentText"
        )
    model = _MODELS.get(k) if isinstance(k, str) else None
    if model is None:
        raise InputError(f"unknown input kind {k!r}; use {_KIND_NAMES}")
    try:
        return model.model_validate({**data, "kind": k})
    except ValidationError as exc:
        if isinstance(item, str):
            raise InputError(problem_text(exc, where=False, limit=5)) from None
        raise InputError(f"not a valid {k}: {problem_text(exc, limit=5)}") from None


_KIND_NAMES = "claim, article, post or document"

__all__ = ["KINDS", "Input", "InputKind", "infer_kind", "read_input"]
