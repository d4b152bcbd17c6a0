"""Checking a document per row (`veracity batch --kind document`).

Each row of the input is one document: its text (the text column) or a web page (a URL
column, fetched through the runtime's guarded HTTP client). The rows share one document
check planned by `Veracity.plan` (the claim method is built once, so its caches
and any memory it keeps serve every document), and each row's `DocumentReport` is
appended to ``documents.jsonl`` in the run directory as a `DocumentRecord`.

The run directory is a `RunStore` (one session at a time, sessions logged, the run's
config, prompts and spec written as for any batch), so a batch resumes where it stopped:
rows already in ``documents.jsonl`` are not checked again. A row that cannot be checked
(a blank text, no text and no URL, a page that cannot be fetched, a claim extraction that
fails) is recorded with status ``error`` and its reason; the other rows go on. Faults of
the whole run (no model, bad credentials, a full disk) stop it.

Documents are checked on the road of every input: each row is a `Job` whose input is
the document, checked by an engine (`veracity.evaluation.engines`: the local one, or Ray
workers that each build the run once and check documents with the composite document
method over its claim method), ``concurrency`` documents at once per worker, the claims
of each at the run's ``concurrency``. A URL row is fetched in this process before its job
is handed out.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from veracity.core.errors import EvalError, InputError
from veracity.core.infra import append_line, cut_torn_line
from veracity.core.readers import Loc
from veracity.core.storage import write_atomically
from veracity.documents import DocumentReport, DocumentText, from_text
from veracity.documents.report import factscore, summarise
from veracity.evaluation.engines import Engine, Job, LocalEngine, WorkerSpec
from veracity.evaluation.prepare import check_resumable
from veracity.evaluation.runner import holding, session
from veracity.evaluation.store import PredictionRecord, RunStore
from veracity.runtime import CachePaths
from veracity.runtime.documents import (
    DocumentOptions,
    document_method,
    document_options,
    fetch_document,
)
from veracity.runtime.service import LLM, Plan, Veracity

__all__ = [
    "DOCUMENTS_FILE",
    "DocumentBatch",
    "DocumentBatchSummary",
    "DocumentColumns",
    "DocumentRecord",
    "DocumentRow",
    "document_rows",
    "prepare_document_batch",
    "read_records",
    "run_document_batch",
    "write_document_results",
]

DOCUMENTS_FILE = "documents.jsonl"
SETTINGS_FILE = "documents.json"
ID_COLUMN = "id"
INPUT_CHARS = 200


class DocumentColumns(BaseModel):
    """Which column holds what part of a document row.

    Attributes:
        text: column with the document's text.
        url: column with a web page's address (a row gives a text or a URL, not both).
        id, title, date: optional columns (the date is ISO 8601, or `date_format`).
    """

    model_config = ConfigDict(extra="forbid")

    text: str = "text"
    url: str | None = None
    id: str | None = None
    title: str | None = None
    date: str | None = None
    date_format: str | None = None


@dataclass(frozen=True)
class DocumentRow:
    """One row: its id and its document (text or URL), or why it cannot be read."""

    id: str
    document: DocumentText | None = None
    url: str | None = None
    problem: str | None = None

    @property
    def summary(self) -> str:
        if self.url is not None:
            return self.url
        if self.document is None:
            return ""
        flat = " ".join(self.document.text.split())
        return flat if len(flat) <= INPUT_CHARS else flat[: INPUT_CHARS - 1] + "…"


class DocumentRecord(BaseModel):
    """One finished row: its report, or the reason it has none."""

    model_config = ConfigDict(extra="forbid")

    id: str
    status: Literal["ok", "error"]
    input: str = ""
    error: str | None = None
    report: DocumentReport | None = None
    latency_s: float = 0.0
    finished_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat())


class DocumentBatchSummary(BaseModel):
    """Totals over every row in the run directory (all sessions)."""

    rows: int
    ok: int
    errors: int
    claims: int
    checked: int
    supported: int
    refuted: int
    mixed: int
    abstained: int
    claim_errors: int
    not_checkworthy: int
    reused: int  # claims that took the verdict of the same claim's earlier check
    # FActScore over the rows checked (`veracity.documents.report.factscore`): the mean of
    # each responding document's supported share of its check-worthy claims
    factuality: float | None
    factuality_penalised: float | None = None  # the same with the length penalty (γ = 10)
    respond_ratio: float | None = None  # documents with a check-worthy claim / documents
    supported_share_of_decided: float | None = None  # all checked claims pooled (micro)
    llm_calls: int
    searches: int
    wall_time_s: float


@dataclass
class DocumentBatch:
    """A document batch planned and checked before any row is read."""

    plan: Plan
    service: Veracity
    store: RunStore
    columns: DocumentColumns
    settings: dict[str, Any]
    options: DocumentOptions

    @property
    def records_path(self) -> Path:
        return self.store.path / DOCUMENTS_FILE

    @property
    def method(self) -> str:
        return self.plan.run.method.name


def prepare_document_batch(
    cfg: Any,
    columns: DocumentColumns,
    run_dir: str | Path,
    *,
    extraction: Any = None,
    corrections: bool = False,
    llm: LLM | None = None,
) -> DocumentBatch:
    """Plan the rows' document check (every rule of `Veracity.plan` for a document) and open or
    resume the run directory.

    Raises:
        CheckRefused: the method takes no claims, bad labels or extraction settings.
        EvalError: the run directory holds another run (or a batch of another kind).
    """
    store = RunStore(run_dir)
    caches = CachePaths(llm=store.llm_cache_path, http=store.http_cache_path)
    service = Veracity(cfg, llm=llm, caches=caches)
    options = document_options(extraction, corrections)
    placeholder = DocumentText(text="(each row's document)")  # only its plan's method is used
    plan = service.plan(
        placeholder, method=cfg.method, extraction=options.extraction, corrections=corrections
    )
    settings = {
        "kind": "document",
        "extraction": plan.method.extractor.config.model_dump(mode="json"),
        "corrections": corrections,
    }
    _check_same_batch(store, plan.run.spec.given, settings)
    store.acquire()
    cut_torn_line(store.path / DOCUMENTS_FILE)
    return DocumentBatch(plan, service, store, columns, settings, options)


def _check_same_batch(store: RunStore, config: Any, settings: dict[str, Any]) -> None:
    if not store.exists():
        return
    try:
        check_resumable(store, config)
    except EvalError as exc:
        why = str(exc).split("; resume it")[0]
        raise EvalError(f"{why}; re-run with its options or choose another --run-dir") from None
    path = store.path / SETTINGS_FILE
    old = store.read_json(path) if path.is_file() else None
    if old is None:
        raise EvalError(f"{store.path} holds a batch of claims, articles or posts, not "
                        "documents; choose another --run-dir")  # fmt: skip
    changed = [k for k in settings if old.get(k) != settings[k]]
    if changed:
        raise EvalError(
            f"{store.path} holds a document batch with different {', '.join(changed)} "
            "settings; re-run with its options or choose another --run-dir"
        )


# --------------------------------------------------------------------------- rows


def document_rows(
    rows: Iterable[tuple[Loc, Any]],
    columns: DocumentColumns,
    order: list[str],
    notice: Callable[[str], None] | None = None,
) -> Iterator[DocumentRow]:
    """The rows as documents, each id once (appended to `order`).

    Without an id column, a column called ``id`` in the first record is taken (and
    `notice` told); otherwise a row's id is ``FILE:LINE``.

    Raises:
        DatasetError: a record is not an object, or an id appears twice.
    """
    from veracity.core.errors import DatasetError

    seen: set[str] = set()
    for n, (loc, raw) in enumerate(rows):
        if not isinstance(raw, dict):
            raise DatasetError(f"{loc}: expected an object, found {type(raw).__name__}")
        if n == 0 and columns.id is None and ID_COLUMN in raw:
            columns = columns.model_copy(update={"id": ID_COLUMN})
            if notice is not None:
                notice(f"row ids come from the input's {ID_COLUMN!r} column (--id COLUMN to "
                       "choose another)")  # fmt: skip
        value = raw.get(columns.id) if columns.id else None
        row_id = str(value) if value not in (None, "") else loc.default_id
        if row_id in seen:
            raise DatasetError(f"{loc}: the id {row_id!r} appears twice in the input")
        seen.add(row_id)
        order.append(row_id)
        yield _row(columns, loc, raw, row_id)


def _row(columns: DocumentColumns, loc: Loc, raw: dict[str, Any], row_id: str) -> DocumentRow:
    """One row's document; a row that cannot be one carries its problem instead."""
    text, url = raw.get(columns.text), raw.get(columns.url) if columns.url else None
    given = [x for x in (text, url) if x not in (None, "")]
    if len(given) != 1:
        what = "both a text and a URL" if given else "no text and no URL"
        col = f"--text {columns.text}" + (f" or --url {columns.url}" if columns.url else "")
        return DocumentRow(row_id, problem=f"{loc}: {what}; give one ({col})")
    if not isinstance(given[0], str):
        return DocumentRow(row_id, problem=f"{loc}: the document is a "
                           f"{type(given[0]).__name__}, not text")  # fmt: skip
    if url not in (None, ""):
        return DocumentRow(row_id, url=url.strip())
    try:
        title = raw.get(columns.title) if columns.title else None
        document = from_text(text, title=title if isinstance(title, str) and title else None)
        when = _date(columns, raw.get(columns.date)) if columns.date else None
        if when is not None:
            document = document.model_copy(update={"published_at": when})
    except (InputError, ValueError) as exc:
        return DocumentRow(row_id, problem=f"{loc}: {exc}")
    return DocumentRow(row_id, document=document)


def _date(columns: DocumentColumns, value: Any) -> datetime | None:
    from veracity.core.dates import parse_date

    formats = [columns.date_format] if columns.date_format else []
    return parse_date(value, formats=formats)


# --------------------------------------------------------------------------- running


def _failed(row: DocumentRow, why: str, latency_s: float = 0.0) -> DocumentRecord:
    return DocumentRecord(
        id=row.id, status="error", input=row.summary, error=why, latency_s=round(latency_s, 4)
    )


async def _jobs(
    rows: Iterable[DocumentRow],
    done: dict[str, DocumentRecord],
    taken: dict[str, DocumentRow],
    record: Callable[[DocumentRecord, bool], None],
) -> AsyncIterator[Job]:
    """The rows not done yet as jobs (a URL row fetched first); a row that cannot be a
    document is recorded as an error at once, a row done earlier told again."""
    for row in rows:
        if row.id in done:
            record(done[row.id], True)
            continue
        if row.problem is not None:
            record(_failed(row, row.problem), False)
            continue
        started = time.perf_counter()
        try:
            document = row.document or await fetch_document(row.url)
        except InputError as exc:
            record(_failed(row, str(exc), time.perf_counter() - started), False)
            continue
        taken[row.id] = row
        yield Job(id=row.id, input=document)  # type: ignore[arg-type]


def document_record(row: DocumentRow, result: PredictionRecord) -> DocumentRecord:
    """A row's record from its job's: the report its verdict carries, or why there is none."""
    report = getattr(result.verdict, "report", None)
    if isinstance(report, DocumentReport):
        return DocumentRecord(id=row.id, status="ok", input=row.summary, report=report,
                              latency_s=result.latency_s)  # fmt: skip
    why = _reason(result.exception) if result.exception else None
    why = why or (result.verdict.error if result.verdict is not None else None)
    return _failed(row, why or "the check gave no report", result.latency_s)


def _reason(trace: str) -> str:
    """A crash's one-line reason, from the last line of its traceback."""
    last = trace.strip().splitlines()[-1] if trace.strip() else ""
    name, _, message = last.partition(": ")
    short = name.rsplit(".", 1)[-1]
    if short in ("ExtractionFailed", "StructuredOutputError"):
        return f"claim extraction failed: {message}"
    if short == "InputError":
        return message
    return f"{short}: {message}" if message else short


async def run_document_batch(
    batch: DocumentBatch,
    rows: Iterable[DocumentRow],
    *,
    concurrency: int = 1,
    emit: Callable[[DocumentRecord, bool], None] | None = None,
    engine: Engine | None = None,
) -> DocumentBatchSummary:
    """Check every row not yet in the run directory, in one logged session.

    Args:
        batch: the prepared batch.
        rows: the rows in input order.
        concurrency: documents checked at once (per worker).
        emit: called with each row's record and whether it was done in an earlier session.
        engine: where the documents are checked (default: `LocalEngine`).
    """
    if concurrency < 1:
        raise EvalError("--concurrency must be at least 1")
    store = batch.store
    with holding(store):
        done = {r.id: r for r in read_records(store)}
        run = batch.plan.run
        store.write_record(run.spec.given.model_dump(mode="json"), run.spec, run.prompts)
        store.write_json(store.path / SETTINGS_FILE, batch.settings)
        started = time.perf_counter()
        async with session(store) as current:

            def record(result: DocumentRecord, earlier: bool) -> None:
                if not earlier:
                    append_line(batch.records_path, result.model_dump_json(), "documents file")
                    current.finished += 1
                if emit is not None:
                    emit(result, earlier)

            taken: dict[str, DocumentRow] = {}
            over = partial(document_method, options=batch.options)  # what a worker checks with
            worker = WorkerSpec(batch.service.config, batch.service.caches, over)
            await (engine or LocalEngine()).run(
                worker, batch.plan.method, _jobs(rows, done, taken, record), concurrency,
                lambda result: record(document_record(taken.pop(result.id), result), False),
            )  # fmt: skip
        return summarize(read_records(store), time.perf_counter() - started)


def read_records(store: RunStore) -> list[DocumentRecord]:
    """Every whole record of the run directory (the last of any id kept).

    Raises:
        EvalError: a line is not a record (naming the line).
    """
    path = store.path / DOCUMENTS_FILE
    if not path.is_file():
        return []
    found: dict[str, DocumentRecord] = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith("\n") or not line.strip():
                continue  # a torn last line: that row is checked again
            try:
                record = DocumentRecord.model_validate_json(line)
            except ValidationError as exc:
                why = exc.errors()[0]["msg"]
                raise EvalError(f"{path}: line {n} is not a document record ({why})") from None
            found[record.id] = record
    return list(found.values())


def drop_errors(store: RunStore) -> int:
    """Forget the rows that errored, so they are checked again; returns how many."""
    kept = read_records(store)
    bad = [r for r in kept if r.status == "error"]
    if bad:

        def write(f: IO[str]) -> None:
            for record in kept:
                if record.status != "error":
                    f.write(record.model_dump_json() + "\n")

        write_atomically(store.path / DOCUMENTS_FILE, write, "documents file")
    return len(bad)


def summarize(records: list[DocumentRecord], wall_time_s: float = 0.0) -> DocumentBatchSummary:
    """Rows by status, the claims' totals over the rows that were checked (the claims of
    every report summed by `veracity.documents.report.summarise`), and FActScore over
    those rows (`veracity.documents.report.factscore`: a macro average over documents)."""
    reports = [r.report for r in records if r.report is not None]
    totals = summarise([o for report in reports for o in report.claims])
    score = factscore(_facts(report.summary) for report in reports)
    ok = sum(r.status == "ok" for r in records)
    return DocumentBatchSummary(
        rows=len(records), ok=ok, errors=len(records) - ok,
        claims=totals.claims, checked=totals.checked, supported=totals.supported,
        refuted=totals.refuted, mixed=totals.mixed, abstained=totals.abstained,
        claim_errors=totals.errors, not_checkworthy=totals.not_checkworthy, reused=totals.reused,
        factuality=score.factuality, factuality_penalised=score.factuality_penalised,
        respond_ratio=score.respond_ratio,
        supported_share_of_decided=score.supported_share_of_decided,
        llm_calls=sum(r.usage.llm_calls for r in reports),
        searches=sum(r.usage.searches for r in reports),
        wall_time_s=round(wall_time_s, 3),
    )  # fmt: skip


def _facts(s: Any) -> tuple[int, int, int]:
    """(supported, checked, check-worthy claims sent to the method) of one summary."""
    return s.supported, s.checked, s.checked + s.abstained + s.errors


def output_line(record: DocumentRecord) -> str:
    """One row's result as a JSON line."""
    return record.model_dump_json()


def write_document_results(path: Path, store: RunStore, order: list[str]) -> int:
    """Write the records of the rows in `order` to `path` (atomically); returns how many.

    Raises:
        EvalError: a row of `order` has no record in the run directory.
    """
    records = {r.id: r for r in read_records(store)}
    missing = [i for i in order if i not in records]
    if missing:
        raise EvalError(f"{len(missing)} rows have no result yet (e.g. {missing[0]!r})")

    def write(f: IO[str]) -> None:
        for row_id in order:
            f.write(output_line(records[row_id]) + "\n")

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, write, "results file")
    return len(order)
