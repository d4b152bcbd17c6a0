"""The documents' options shared by `veracity check --kind document` and `veracity batch
--kind document`: what the claim extraction does (`ExtractionConfig`) and the HTML report.

The flags only collect what the user gave; the service validates it
(`veracity.runtime.documents.extraction_config`), so a bad value is the same clear
refusal (exit 2) from the command line, the Python API and the MCP tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from veracity.cli.app import fail

CORRECTIONS = typer.Option(
    False, "--corrections", help="documents: suggest a correction for each refuted claim"
)
NO_DECOMPOSE = typer.Option(
    False, "--no-decompose", help="documents: each sentence is one claim (no atomic claims)"
)
NO_DECONTEXTUALISE = typer.Option(
    False,
    "--no-decontextualise",
    help="documents: check claims as written (no rewrite resolving pronouns and references)",
)
NO_CHECKWORTHINESS = typer.Option(
    False,
    "--no-checkworthiness",
    help="documents: check every claim (no sorting out opinions, advice, questions)",
)
MAX_SENTENCES = typer.Option(
    None, "--max-sentences", help="documents: sentences read from the start (default 40)"
)
DEDUPE_THRESHOLD = typer.Option(
    None,
    "--dedupe-threshold",
    help="documents: word overlap (above 0, at most 1) at which a claim repeats an earlier "
    "one and is merged into it (default 0.8)",
)


def extraction_flags(
    no_decompose: bool,
    no_decontextualise: bool,
    no_checkworthiness: bool,
    max_sentences: int | None,
    dedupe_threshold: float | None,
) -> dict[str, Any]:
    """The extraction settings the flags change (an empty dict: the defaults)."""
    given: dict[str, Any] = {}
    if no_decompose:
        given["decompose"] = False
    if no_decontextualise:
        given["decontextualise"] = False
    if no_checkworthiness:
        given["checkworthiness"] = False
    if max_sentences is not None:
        given["max_sentences"] = max_sentences
    if dedupe_threshold is not None:
        given["dedupe_threshold"] = dedupe_threshold
    return given


def flag_names(settings: dict[str, Any]) -> list[str]:
    """The command-line flags that set `settings` (for "applies to documents")."""
    names = {
        "decompose": "--no-decompose",
        "decontextualise": "--no-decontextualise",
        "checkworthiness": "--no-checkworthiness",
        "max_sentences": "--max-sentences",
        "dedupe_threshold": "--dedupe-threshold",
    }
    return [names[k] for k in settings]


def documents_only(given: list[str]) -> None:
    """Exit 2 when documents' options were `given` to a check of another kind."""
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        fail(f"{', '.join(given)} {verb} to documents: add --kind document")


def checked_extraction(settings: dict[str, Any]) -> Any:
    """`settings` validated by the service (an `ExtractionConfig`); exits 2 on a bad value,
    naming the flag."""
    from veracity.runtime.documents import extraction_config
    from veracity.runtime.rules import CheckRefused

    try:
        return extraction_config(settings)
    except CheckRefused as exc:
        text = str(exc)
        for key, flag in zip(settings, flag_names(settings), strict=True):
            text = text.replace(key, flag)
        fail(text)


def checked_html_path(path: Path | None, what: str = "--html") -> Path | None:
    """`path` if an HTML report can be written there (checked before any work)."""
    if path is None:
        return None
    from veracity.core.errors import InputError
    from veracity.core.textio import output_file

    try:
        return output_file(path.expanduser(), (), what)
    except InputError as exc:
        fail(str(exc))


__all__ = [
    "DEDUPE_THRESHOLD",
    "MAX_SENTENCES",
    "NO_CHECKWORTHINESS",
    "NO_DECOMPOSE",
    "NO_DECONTEXTUALISE",
    "checked_extraction",
    "checked_html_path",
    "documents_only",
    "extraction_flags",
    "flag_names",
]
