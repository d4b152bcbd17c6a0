"""Checking a file or a stream of unlabelled inputs (`veracity batch`).

A batch reads rows from a JSONL, JSON, CSV or TSV file, or standard input (``-``),
through a `ColumnSpec` (the generic loader's column mapping: claims, articles, posts
with replies), and checks each row with one method. It runs in the same run directory
as `veracity eval` (`RunStore`): finished rows are appended to ``predictions.jsonl``
by this process alone, whichever engine checks them, so an interrupted batch resumes
where it stopped and rows already done are not checked again.

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
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ValidationError

from veracity.core.errors import ConfigError, DatasetError, EvalError, InputError
from veracity.core.labels import LabelSpace
from veracity.core.readers import Loc, Stream
from veracity.core.storage import write_atomically
from veracity.core.textio import input_file
from veracity.datasets.generic import ColumnSpec, row_input
from veracity.evaluation.engines import Engine, Job, LocalEngine, WorkerSpec
from veracity.evaluation.prepare import check_resumable
from veracity.evaluation.runner import holding, session
from veracity.evaluation.store import PredictionRecord, RunStore
from veracity.evaluation.writer import RecordWriter
from veracity.runtime import CachePaths
from veracity.runtime.service import KIND_REFUSED, LLM, Veracity

STDIN = "-"

__all__ = [
    "STDIN",
    "BatchRun",
    "BatchSummary",
    "Rows",
    "output_line",
    "prepare_batch",
    "read_rows",
    "row_job",
    "run_batch",
    "summarize",
    "write_results",
]


@dataclass
class BatchRun:
    """A batch resolved and checked before any row is checked."""

    config: Any  # a veracity.core.config.RunConfig, label space resolved
    method: Any
    space: LabelSpace
    columns: ColumnSpec
    store: RunStore
    prompts: dict[str, str] = field(default_factory=dict)
    caches: CachePaths | None = None
    spec: Any = None  # the effective run (veracity.runtime.spec.RunSpec), in run.json


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


def prepare_batch(
    cfg: Any, columns: ColumnSpec, run_dir: str | Path, *, llm: LLM | None = None
) -> BatchRun:
    """Build the method and open (or resume) the run directory for a batch.

    Raises:
        EvalError: the config cannot be built, the method does not check this kind of
            input, or the run directory holds a different run.
    """
    store = RunStore(run_dir)
    paths = CachePaths(llm=store.llm_cache_path, http=store.http_cache_path)
    try:  # the rules `check` applies, the input kind included, before anything is built
        run = Veracity(cfg, llm=llm, caches=paths).plan_run(columns.kind)
    except ConfigError as exc:  # a CheckRefused among them
        hint = " (see --kind)" if getattr(exc, "title", None) == KIND_REFUSED else ""
        raise EvalError(f"{exc}{hint}") from exc
    try:
        check_resumable(store, run.spec.given)
    except EvalError as exc:
        why = str(exc).split("; resume it")[0]  # the advice names `eval`'s options
        raise EvalError(f"{why}; re-run with its options or choose another --run-dir") from None
    store.acquire()  # one session at a time; repairs a torn last line before any read
    return BatchRun(
        run.spec.given, run.method, run.method.label_space, columns, store, run.prompts, paths,
        spec=run.spec,
    )  # fmt: skip


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


def row_job(columns: ColumnSpec, loc: Loc, raw: Any) -> Job:
    """The job for one record; its id is the id column or ``FILE:LINE``.

    Raises:
        DatasetError: the record is not an object or a column does not fit, naming where.
    """
    if not isinstance(raw, dict):
        raise DatasetError(f"{loc}: expected an object, found {type(raw).__name__}")
    missing = [c for r, c in columns.columns.items() if r == "text" and c not in raw]
    if missing:
        raise DatasetError(f"{loc}: no column {missing[0]!r} (set the text column with --text)")
    value = raw.get(columns.id) if columns.id else None
    job_id = str(value) if value not in (None, "") else loc.default_id
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
        columns: ColumnSpec,
        notice: Callable[[str], None] | None = None,
    ):
        self.rows = rows
        self.columns = columns
        self.notice = notice
        self.order: list[str] = []
        self._seen: set[str] = set()
        self._first = True

    def __iter__(self) -> Iterator[Job]:
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
    jobs: Iterator[Job],
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
        concurrency: rows checked at once per worker (default: the config's).
        engine: where rows are checked (default: this process).
        emit: called for every row's result as soon as it is known, in this process: at
            once for rows done in an earlier session, on finishing for the others.
        threaded: read `jobs` in a thread (a stream that may block, like standard input).
    """
    k = concurrency or batch.config.concurrency
    if k < 1:
        raise EvalError("--concurrency must be at least 1")
    store = batch.store
    with holding(store):  # prepare_batch took it already; given back at the end
        done = {r.id: r for r in store.read_predictions()}
        store.write_record(batch.config.model_dump(mode="json"), batch.spec, batch.prompts)
        started = time.perf_counter()
        async with session(store, engine) as current:

            def saved(record: PredictionRecord) -> None:
                current.add(record)
                if emit is not None:
                    emit(record)

            todo = _pending(jobs, done, emit, threaded)
            spec = WorkerSpec(batch.config, batch.caches)
            chosen = engine or LocalEngine()
            await RecordWriter(store, saved).run(
                lambda sink: chosen.run(spec, batch.method, todo, k, sink)
            )
        wall = time.perf_counter() - started
        return summarize(store.read_predictions(), wall, current.finished)


async def _pending(
    jobs: Iterator[Job],
    done: dict[str, PredictionRecord],
    emit: Callable[[PredictionRecord], None] | None,
    threaded: bool,
) -> AsyncIterator[Job]:
    """The jobs not done yet; done ones go straight to `emit`."""
    it = iter(jobs)
    while True:
        job = await asyncio.to_thread(next, it, None) if threaded else next(it, None)
        if job is None:
            return
        if job.id in done:
            if emit is not None:
                emit(done[job.id])
            continue
        yield job


def summarize(
    records: list[PredictionRecord], wall_time_s: float = 0.0, finished: int = 0
) -> BatchSummary:
    """Labels, statuses and usage over `records`; throughput over this session."""
    labels = Counter(r.predicted for r in records if r.predicted is not None)
    statuses = Counter(r.status for r in records)
    usages = [r.usage for r in records]
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
    )


# --------------------------------------------------------------------------- output


def _all_searches_failed(record: PredictionRecord) -> bool:
    found = record.verdict.search_failures if record.verdict is not None else None
    return found is not None and found.all_failed


def output_line(record: PredictionRecord) -> str:
    """One result as a JSON line: the run store's record without gold-label fields, with
    a ``warning`` when searches failed (the verdict's metadata holds the figures)."""
    line = record.model_dump_json(exclude={"gold", "gold_original"})
    warning = record.verdict.search_warning if record.verdict is not None else None
    if warning is None:
        return line
    return f'{line[:-1]},"warning":{json.dumps(warning, ensure_ascii=False)}}}'


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
