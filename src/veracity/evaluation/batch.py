"""Checking a file or a stream of unlabelled inputs (`veracity batch`).

A batch reads rows from a JSONL, JSON, CSV or TSV file, or standard input (``-``),
through a `ColumnSpec` (the generic loader's column mapping: claims, articles, posts
with replies) or, for documents, `DocumentColumns` (a text or a web page per row), and
checks each row with one method. It runs in the same run directory as `veracity eval`
(`RunStore`): finished rows are appended to ``predictions.jsonl`` by this process alone,
whichever engine checks them, so an interrupted batch resumes where it stopped and rows
already done are not checked again.

A document is one more input kind on this road: its rows are checked by the composite
document method over the run's claim method (`veracity.runtime.documents`; Ray workers
build it through `WorkerSpec.over`), and a document's record carries its
`DocumentReport` (`PredictionRecord.report`). A document row that cannot be checked (a
blank text, no text and no URL, a page that cannot be fetched, a failed claim
extraction) is recorded with status ``error`` and its reason, and the other rows go on.
The claim-extraction settings a document batch was run with are kept in
``documents.json``; a run directory written before documents took this road (records in
``documents.jsonl``) is adopted into ``predictions.jsonl`` when it is resumed.

Results go to an output file (written in input order when the batch ends) or, with
``-``, to standard output as each row finishes (rows done in an earlier session are
written at once from the run directory), so a batch composes in a shell pipeline.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from veracity.core.errors import ConfigError, DatasetError, EvalError, InputError
from veracity.core.labels import LabelSpace
from veracity.core.readers import Loc, Stream
from veracity.core.storage import write_atomically
from veracity.core.textio import input_file
from veracity.core.types import Verdict
from veracity.datasets.generic import ColumnSpec, row_input
from veracity.documents import DocumentReport, from_text
from veracity.documents.report import DocumentVerdict, factscore, summarise
from veracity.evaluation.engines import Engine, Job, LocalEngine, WorkerSpec
from veracity.evaluation.prepare import check_resumable
from veracity.evaluation.runner import holding, session
from veracity.evaluation.store import PredictionRecord, RunStore
from veracity.evaluation.writer import RecordWriter
from veracity.runtime import CachePaths
from veracity.runtime.documents import (
    document_method,
    document_options,
    fetch_document,
)
from veracity.runtime.service import KIND_REFUSED, LLM, Veracity

STDIN = "-"
SETTINGS_FILE = "documents.json"  # a document batch's extraction settings
OLD_DOCUMENTS_FILE = "documents.jsonl"  # a document batch's records, before they took this road

__all__ = [
    "STDIN",
    "BatchRun",
    "BatchSummary",
    "DocumentColumns",
    "DocumentTotals",
    "Rows",
    "output_line",
    "prepare_batch",
    "read_rows",
    "row_job",
    "run_batch",
    "summarize",
    "write_results",
]


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
    kind: Literal["document"] = "document"


@dataclass
class BatchRun:
    """A batch resolved and checked before any row is checked."""

    config: Any  # a veracity.core.config.RunConfig, label space resolved
    method: Any
    space: LabelSpace
    columns: ColumnSpec | DocumentColumns
    store: RunStore
    prompts: dict[str, str] = field(default_factory=dict)
    caches: CachePaths | None = None
    spec: Any = None  # the effective run (veracity.runtime.spec.RunSpec), in run.json
    over: Callable[[Any], Any] | None = None  # documents: how a worker builds the composite
    settings: dict[str, Any] | None = None  # documents: the extraction settings kept
    service: Veracity | None = None

    @property
    def documents(self) -> bool:
        return self.columns.kind == "document"

    def close(self) -> None:
        if self.service is not None:
            self.service.close()


class DocumentTotals(BaseModel):
    """The document part of a batch's summary: claims over the reports of the documents
    checked, and FActScore over those documents (`veracity.documents.report.factscore`:
    the mean of each responding document's supported share of its check-worthy claims)."""

    documents: int  # rows with a report
    claims: int
    checked: int
    supported: int
    refuted: int
    mixed: int
    abstained: int
    claim_errors: int
    not_checkworthy: int
    reused: int  # claims that took the verdict of the same claim's earlier check
    dropped_unanchored: int = 0  # claims dropped before checking: anchored in no sentence
    factuality: float | None
    factuality_penalised: float | None = None  # the same with the length penalty (γ = 10)
    respond_ratio: float | None = None  # documents with a check-worthy claim / documents
    supported_share_of_decided: float | None = None  # all checked claims pooled (micro)


class BatchSummary(BaseModel):
    """What a batch produced, over every session of its run directory.

    Attributes:
        rows: results in the run directory.
        labels: how many rows got each label.
        statuses: rows by status (ok, abstained, error, exception).
        llm_calls, cached_llm_calls, searches, tokens, cost_usd, unpriced_llm_calls:
            usage over all rows (``llm_calls`` counts calls made, ``cached_llm_calls``
            replies served from the cache).
        failed_searches: searches that failed, over all rows.
        searches_all_failed: rows whose searches all failed (no retrieved evidence).
        wall_time_s: this session's wall time; rows_per_s: this session's throughput.
        documents: the claims and scores of a document batch (None for other inputs).
    """

    rows: int
    labels: dict[str, int]
    statuses: dict[str, int]
    llm_calls: int
    cached_llm_calls: int
    searches: int
    failed_searches: int = 0
    searches_all_failed: int = 0
    tokens: int
    cost_usd: float
    unpriced_llm_calls: int
    wall_time_s: float
    rows_per_s: float | None
    documents: DocumentTotals | None = None


def prepare_batch(
    cfg: Any,
    columns: ColumnSpec | DocumentColumns,
    run_dir: str | Path,
    *,
    llm: LLM | None = None,
    extraction: Any = None,
    corrections: bool = False,
) -> BatchRun:
    """Build the method and open (or resume) the run directory for a batch.

    A document batch (`DocumentColumns`) is checked by the composite over the config's claim
    method, with the claim-extraction settings `extraction` and `corrections`.

    Raises:
        EvalError: the config cannot be built, the method does not check this kind of
            input, the extraction settings are invalid, or the run directory holds a
            different run (or a batch of another kind, or other extraction settings).
    """
    store = RunStore(run_dir)
    paths = CachePaths(llm=store.llm_cache_path, http=store.http_cache_path)
    documents = columns.kind == "document"
    service = Veracity(cfg, llm=llm, caches=paths)
    try:  # the rules `check` applies, the input kind included, before anything is built
        if documents:
            options = document_options(extraction, corrections)
            run = service.plan_run("document", method=cfg.method)
            method = document_method(run, options)
        else:
            run = service.plan_run(columns.kind)
            method = run.method
    except ConfigError as exc:  # a CheckRefused among them
        hint = " (see --kind)" if getattr(exc, "title", None) == KIND_REFUSED else ""
        raise EvalError(f"{exc}{hint}") from exc
    settings = None
    if documents:
        extracted = method.extractor.config.model_dump(mode="json")
        settings = {"kind": "document", "extraction": extracted, "corrections": corrections}
    try:
        check_resumable(store, run.spec.given)
    except EvalError as exc:
        why = str(exc).split("; resume it")[0]  # the advice names `eval`'s options
        raise EvalError(f"{why}; re-run with its options or choose another --run-dir") from None
    _check_same_kind(store, settings)
    store.acquire()  # one session at a time; repairs a torn last line before any read
    if documents:
        _adopt_old_records(store, run.method.label_space.name, run.method.name)
    return BatchRun(
        run.spec.given, method, run.method.label_space, columns, store, run.prompts, paths,
        spec=run.spec, settings=settings, service=service,
        over=partial(document_method, options=options) if documents else None,
    )  # fmt: skip


def _check_same_kind(store: RunStore, settings: dict[str, Any] | None) -> None:
    """Refuse to resume a document batch as a batch of claims (or the reverse), or with
    other extraction settings."""
    path = store.path / SETTINGS_FILE
    old = store.read_json(path) if path.is_file() else None
    if settings is None:
        if old is not None:
            raise EvalError(f"{store.path} holds a batch of documents; add --kind document or "
                            "choose another --run-dir")  # fmt: skip
        return
    if old is None:
        if store.predictions_path.is_file() and store.read_predictions():
            raise EvalError(f"{store.path} holds a batch of claims, articles or posts, not "
                            "documents; choose another --run-dir")  # fmt: skip
        return
    changed = [k for k in settings if old.get(k) != settings[k]]
    if changed:
        raise EvalError(
            f"{store.path} holds a document batch with different {', '.join(changed)} "
            "settings; re-run with its options or choose another --run-dir"
        )


class _OldDocumentRecord(BaseModel):
    """A row of ``documents.jsonl``, as document batches kept them before they took this road."""

    model_config = ConfigDict(extra="forbid")

    id: str
    status: Literal["ok", "error"]
    input: str = ""
    error: str | None = None
    report: DocumentReport | None = None
    latency_s: float = 0.0
    finished_at: str


def _adopt_old_records(store: RunStore, space: str, method: str) -> int:
    """Move the records of an older document batch (``documents.jsonl``) into the run's
    predictions, so it resumes and reports on this road; the old file is kept, renamed
    ``documents.jsonl.adopted``. Returns how many records were adopted.

    Raises:
        EvalError: a line is not such a record (naming the line).
    """
    path = store.path / OLD_DOCUMENTS_FILE
    if not path.is_file():
        return 0
    have = {r.id for r in store.read_predictions()}
    found: dict[str, PredictionRecord] = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith("\n") or not line.strip():
                continue  # a torn last line: that row is checked again
            try:
                old = _OldDocumentRecord.model_validate_json(line)
            except ValidationError as exc:
                why = exc.errors()[0]["msg"]
                raise EvalError(f"{path}: line {n} is not a document record ({why})") from None
            if old.id not in have:
                found[old.id] = _adopted(old, space, method)
    store.append_many(list(found.values()))
    path.rename(path.with_name(OLD_DOCUMENTS_FILE + ".adopted"))
    return len(found)


def _adopted(old: _OldDocumentRecord, space: str, method: str) -> PredictionRecord:
    if old.report is not None:
        verdict: Verdict = DocumentVerdict.of(old.report)
    else:
        verdict = _error_verdict(old.error or "the check gave no report", space, method)
    record = PredictionRecord.from_verdict(old.id, None, None, verdict, old.latency_s, old.input)
    return record.model_copy(update={"finished_at": old.finished_at})


def _error_verdict(why: str, space: str, method: str) -> Verdict:
    return Verdict(label=None, label_space=space, method=method, error=why)


# --------------------------------------------------------------------------- input


def read_rows(source: str | Path, columns: ColumnSpec) -> Iterator[tuple[Loc, Any]]:
    """The raw records of `source` (a file, or ``-`` for standard input, read lazily),
    through the shared bounded readers (`veracity.core.readers`), which check and bound files
    and standard input alike.

    Raises:
        DatasetError: the file is missing, not a regular file or unreadable, or a record
            is malformed or too long (naming its line).
    """
    from veracity.datasets._readers import read_csv, read_json_array, read_jsonl

    if str(source) == STDIN:
        fmt = columns.format or "jsonl"
        if fmt == "json":
            raise DatasetError("standard input is read line by line: use JSONL, CSV or TSV")
        stream = Stream(sys.stdin.buffer)
        if fmt == "jsonl":
            return read_jsonl(stream)
        return read_csv(stream, delimiter="\t" if fmt == "tsv" else ",")
    path = Path(source).expanduser()
    try:
        input_file(path)
    except InputError as exc:
        raise DatasetError(str(exc)) from None
    fmt = columns.file_format(path)
    if fmt in ("csv", "tsv"):
        return read_csv(path, delimiter="\t" if fmt == "tsv" else ",")
    return read_jsonl(path) if fmt == "jsonl" else read_json_array(path)


@dataclass(frozen=True)
class DocumentRow:
    """A document row not ready to check: a web page to fetch first, or why the row is no
    document (recorded as an error when its turn comes)."""

    id: str
    summary: str
    url: str | None = None
    problem: str | None = None


def row_job(columns: ColumnSpec | DocumentColumns, loc: Loc, raw: Any) -> Job | DocumentRow:
    """The job for one record; its id is the id column or ``FILE:LINE``. A document row that
    is a URL, or cannot be a document, is a `DocumentRow`.

    Raises:
        DatasetError: the record is not an object or a column does not fit, naming where.
    """
    if not isinstance(raw, dict):
        raise DatasetError(f"{loc}: expected an object, found {type(raw).__name__}")
    value = raw.get(columns.id) if columns.id else None
    job_id = str(value) if value not in (None, "") else loc.default_id
    if isinstance(columns, DocumentColumns):
        return _document_job(columns, loc, raw, job_id)
    missing = [c for r, c in columns.columns.items() if r == "text" and c not in raw]
    if missing:
        raise DatasetError(f"{loc}: no column {missing[0]!r} (set the text column with --text)")
    try:
        return Job(job_id, row_input(columns, raw, job_id))
    except ValidationError as exc:  # the field and the reason, without pydantic's links
        why = "; ".join(
            ".".join(map(str, e["loc"])) + ": " + e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        )
        raise DatasetError(f"{loc}: {why}") from None
    except ValueError as exc:
        raise DatasetError(f"{loc}: {exc}") from None


def _document_job(
    columns: DocumentColumns, loc: Loc, raw: dict[str, Any], row_id: str
) -> Job | DocumentRow:
    """One row's document; a row that cannot be one carries its problem instead."""
    text, url = raw.get(columns.text), raw.get(columns.url) if columns.url else None
    given = [x for x in (text, url) if x not in (None, "")]
    if len(given) != 1:
        what = "both a text and a URL" if given else "no text and no URL"
        col = f"--text {columns.text}" + (f" or --url {columns.url}" if columns.url else "")
        return DocumentRow(row_id, "", problem=f"{loc}: {what}; give one ({col})")
    if not isinstance(given[0], str):
        return DocumentRow(row_id, "", problem=f"{loc}: the document is a "
                           f"{type(given[0]).__name__}, not text")  # fmt: skip
    if url not in (None, ""):
        return DocumentRow(row_id, url.strip(), url=url.strip())
    try:
        title = raw.get(columns.title) if columns.title else None
        document = from_text(text, title=title if isinstance(title, str) and title else None)
        when = _date(columns, raw.get(columns.date)) if columns.date else None
        if when is not None:
            document = document.model_copy(update={"published_at": when})
    except (InputError, ValueError) as exc:
        return DocumentRow(row_id, _short(text), problem=f"{loc}: {exc}")
    return Job(row_id, document)  # type: ignore[arg-type]


def _short(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _date(columns: DocumentColumns, value: Any) -> datetime | None:
    from veracity.core.dates import parse_date

    formats = [columns.date_format] if columns.date_format else []
    return parse_date(value, formats=formats)


ID_COLUMN = "id"  # taken as the id column, when the input has one and --id names none


class Rows:
    """The jobs of an input, each id once; remembers the input order.

    Without an id column in `columns`, a column called ``id`` in the first record is taken
    as the id column (and `notice` is told so, once); otherwise a row's id is
    ``FILE:LINE``.
    """

    def __init__(
        self,
        rows: Iterator[tuple[Loc, Any]],
        columns: ColumnSpec | DocumentColumns,
        notice: Callable[[str], None] | None = None,
    ):
        self.rows = rows
        self.columns = columns
        self.notice = notice
        self.order: list[str] = []
        self._seen: set[str] = set()
        self._first = True

    def __iter__(self) -> Iterator[Job | DocumentRow]:
        for loc, raw in self.rows:
            if self._first:
                self._first = False
                self._pick_id_column(raw)
            job = row_job(self.columns, loc, raw)
            if job.id in self._seen:
                column = f" (ids from the column {self.columns.id!r})" if self.columns.id else ""
                raise DatasetError(f"{loc}: the id {job.id!r} appears twice in the input{column}")
            self._seen.add(job.id)
            self.order.append(job.id)
            yield job

    def _pick_id_column(self, first: Any) -> None:
        if self.columns.id is None and isinstance(first, dict) and ID_COLUMN in first:
            self.columns = self.columns.model_copy(update={"id": ID_COLUMN})
            if self.notice is not None:
                self.notice(
                    f"row ids come from the input's {ID_COLUMN!r} column (--id COLUMN to "
                    "choose another)"
                )


# --------------------------------------------------------------------------- running


async def run_batch(
    batch: BatchRun,
    jobs: Iterator[Job | DocumentRow],
    *,
    concurrency: int | None = None,
    engine: Engine | None = None,
    emit: Callable[[PredictionRecord], None] | None = None,
    threaded: bool = False,
) -> BatchSummary:
    """Check every job not yet in the run directory, in one logged session.

    Args:
        batch: the prepared batch.
        jobs: the jobs in input order (`Rows`), read lazily.
        concurrency: rows checked at once per worker (default: the config's; documents 1).
        engine: where rows are checked (default: this process).
        emit: called for every row's result as soon as it is known, in this process: at
            once for rows done in an earlier session, on finishing for the others.
        threaded: read `jobs` in a thread (a stream that may block, like standard input).
    """
    k = concurrency or (1 if batch.documents else batch.config.concurrency)
    if k < 1:
        raise EvalError("--concurrency must be at least 1")
    store = batch.store
    with holding(store):  # prepare_batch took it already; given back at the end
        done = {r.id: r for r in store.read_predictions()}
        store.write_record(batch.config.model_dump(mode="json"), batch.spec, batch.prompts)
        if batch.settings is not None:
            store.write_json(store.path / SETTINGS_FILE, batch.settings)
        started = time.perf_counter()
        async with session(store, engine) as current:

            def saved(record: PredictionRecord) -> None:
                current.add(record)
                if emit is not None:
                    emit(record)

            writer = RecordWriter(store, saved)
            urls: dict[str, str] = {}  # a fetched page's row: its record shows the URL
            settle = partial(_settled, batch, urls, writer) if batch.documents else writer
            todo = _pending(batch, jobs, done, emit, threaded, settle, urls)
            spec = WorkerSpec(batch.config, batch.caches, batch.over)
            chosen = engine or LocalEngine()
            await writer.run(lambda sink: chosen.run(spec, batch.method, todo, k, settle))
        wall = time.perf_counter() - started
        return summarize(store.read_predictions(), wall, current.finished, batch.documents)


async def _pending(
    batch: BatchRun,
    jobs: Iterator[Job | DocumentRow],
    done: dict[str, PredictionRecord],
    emit: Callable[[PredictionRecord], None] | None,
    threaded: bool,
    sink: Callable[[PredictionRecord], None],
    urls: dict[str, str],
) -> AsyncIterator[Job]:
    """The jobs not done yet; done ones go straight to `emit`. A document row that cannot
    be checked goes to `sink` as an error; a web page is fetched here first."""
    it = iter(jobs)
    while True:
        job = await asyncio.to_thread(next, it, None) if threaded else next(it, None)
        if job is None:
            return
        if job.id in done:
            if emit is not None:
                emit(done[job.id])
            continue
        if isinstance(job, DocumentRow):
            started = time.perf_counter()
            try:
                if job.problem is not None:
                    raise InputError(job.problem)
                document = await fetch_document(job.url)
            except InputError as exc:
                sink(_failed(batch, job.id, job.summary, str(exc), started))
                continue
            urls[job.id] = job.summary
            job = Job(job.id, document)  # type: ignore[arg-type]
        yield job


def _failed(
    batch: BatchRun, row_id: str, summary: str, why: str, started: float
) -> PredictionRecord:
    verdict = _error_verdict(why, batch.space.name, batch.config.method)
    return PredictionRecord.from_verdict(
        row_id, None, None, verdict, time.perf_counter() - started, input=summary
    )


_EXPECTED = ("ExtractionFailed", "StructuredOutputError", "InputError")


def _settled(
    batch: BatchRun,
    urls: dict[str, str],
    sink: Callable[[PredictionRecord], None],
    record: PredictionRecord,
) -> None:
    """A document's record as kept: a failed claim extraction (or a document the claim
    method refuses) is the row's error, not a crash; a fetched page shows its URL."""
    url = urls.pop(record.id, None)
    if record.status == "exception" and record.exception:
        name, message = _last_line(record.exception)
        if name in _EXPECTED:
            why = f"claim extraction failed: {message}" if name != "InputError" else message
            verdict = _error_verdict(why, batch.space.name, batch.config.method)
            record = PredictionRecord.from_verdict(
                record.id, None, None, verdict, record.latency_s, input=record.input
            )
    if url is not None:
        record = record.model_copy(update={"input": url})
    sink(record)


def _last_line(trace: str) -> tuple[str, str]:
    """A crash's exception class (short name) and message, from its traceback's last line."""
    last = trace.strip().splitlines()[-1] if trace.strip() else ""
    name, _, message = last.partition(": ")
    return name.rsplit(".", 1)[-1], message


def summarize(
    records: list[PredictionRecord],
    wall_time_s: float = 0.0,
    finished: int = 0,
    documents: bool = False,
) -> BatchSummary:
    """Labels, statuses and usage over `records`; throughput over this session; for a
    batch of `documents` (or records with reports), the document totals."""
    labels = Counter(r.predicted for r in records if r.predicted is not None)
    statuses = Counter(r.status for r in records)
    usages = [r.usage for r in records]
    reports = [r.report for r in records if r.report is not None]
    return BatchSummary(
        rows=len(records),
        labels=dict(sorted(labels.items())),
        statuses={s: statuses.get(s, 0) for s in ("ok", "abstained", "error", "exception")},
        llm_calls=sum(u.llm_calls for u in usages),
        cached_llm_calls=sum(u.cached_llm_calls for u in usages),
        searches=sum(u.searches for u in usages),
        failed_searches=sum(u.failed_searches for u in usages),
        searches_all_failed=sum(1 for r in records if _all_searches_failed(r)),
        tokens=sum(u.total_tokens for u in usages),
        cost_usd=round(sum(u.cost_usd for u in usages), 6),
        unpriced_llm_calls=sum(u.unpriced_llm_calls for u in usages),
        wall_time_s=round(wall_time_s, 3),
        rows_per_s=round(finished / wall_time_s, 3) if wall_time_s > 0 and finished else None,
        documents=document_totals(reports) if documents or reports else None,
    )


def document_totals(reports: list[DocumentReport]) -> DocumentTotals:
    """The claims' totals over `reports` (summed by `veracity.documents.report.summarise`)
    and FActScore over them (`veracity.documents.report.factscore`: a macro average over
    documents)."""
    dropped = sum(report.summary.dropped_unanchored for report in reports)
    totals = summarise([o for report in reports for o in report.claims], dropped)
    score = factscore(_facts(report.summary) for report in reports)
    return DocumentTotals(
        documents=len(reports), claims=totals.claims, checked=totals.checked,
        supported=totals.supported, refuted=totals.refuted, mixed=totals.mixed,
        abstained=totals.abstained, claim_errors=totals.errors,
        not_checkworthy=totals.not_checkworthy, reused=totals.reused,
        dropped_unanchored=totals.dropped_unanchored, factuality=score.factuality,
        factuality_penalised=score.factuality_penalised,
        respond_ratio=score.respond_ratio,
        supported_share_of_decided=score.supported_share_of_decided,
    )  # fmt: skip


def _facts(s: Any) -> tuple[int, int, int]:
    """(supported, checked, check-worthy claims sent to the method) of one summary."""
    return s.supported, s.checked, s.checked + s.abstained + s.errors


# --------------------------------------------------------------------------- output


def _all_searches_failed(record: PredictionRecord) -> bool:
    found = record.verdict.search_failures if record.verdict is not None else None
    return found is not None and found.all_failed


def output_line(record: PredictionRecord) -> str:
    """One result as a JSON line: the run store's record without gold-label fields (a
    document's with its ``report``), with the ``error`` of a row that failed and a
    ``warning`` when searches failed (the verdict's metadata holds the figures)."""
    line = record.model_dump_json(exclude={"gold", "gold_original"})
    extra = {}
    if record.status == "error" and record.verdict is not None:
        extra["error"] = record.verdict.error
    warning = record.verdict.search_warning if record.verdict is not None else None
    if warning is not None:
        extra["warning"] = warning
    if not extra:
        return line
    tail = ",".join(f"{json.dumps(k)}:{json.dumps(v, ensure_ascii=False)}"
                    for k, v in extra.items())  # fmt: skip
    return f"{line[:-1]},{tail}}}"


def write_results(path: Path, store: RunStore, order: list[str]) -> int:
    """Write the results of the rows in `order` to `path` (atomically); returns how many.

    Raises:
        EvalError: a row of `order` has no result in the run directory.
        StorageError: the file cannot be written (full disk, read-only folder).
    """
    records = {r.id: r for r in store.read_predictions()}
    missing = [i for i in order if i not in records]
    if missing:
        raise EvalError(f"{len(missing)} rows have no result yet (e.g. {missing[0]!r})")
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(f: IO[str]) -> None:
        for row_id in order:
            f.write(output_line(records[row_id]) + "\n")

    write_atomically(path, write, "results file")  # no temp file left when the disk fills
    return len(order)
