"""`veracity index build|add|list|search`: local corpora for offline retrieval."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from veracity.cli.app import PLAIN, app, console, fail, out, styled
from veracity.core.errors import DatasetError, SourceError

if TYPE_CHECKING:  # the rest is imported where it is used, so that commands start fast
    from veracity.cli.progress_view import ProgressView
    from veracity.core.types import Document
    from veracity.retrieval.local.index import IndexManifest

index_app = typer.Typer(
    help="Build and search local corpora (BM25, dense, hybrid).",
    no_args_is_help=True,
    **PLAIN,  # type: ignore[arg-type]
)
app.add_typer(index_app, name="index")

_MODES = ("bm25", "dense", "hybrid")


def _mode(value: str | None) -> str | None:
    if value is not None and value not in _MODES:
        fail(f"unknown mode {value!r}; use one of {', '.join(_MODES)}")
    return value


def _read(path: Path, fields: str | None, view: ProgressView | None = None) -> list[Document]:
    from veracity.retrieval.local.docs import CorpusInputError, FieldMap, read_documents

    try:
        field_map = FieldMap.parse(fields) if fields else None
        if view is not None:
            return _counted(read_documents(path, field_map), view)
        with console.status(f"reading {path}…"):
            return list(read_documents(path, field_map))
    except CorpusInputError as exc:
        fail(str(exc))


def _dataset_corpus(name: str, view: ProgressView) -> list[Document]:
    from veracity.datasets import get_dataset

    try:
        return _counted(get_dataset(name).corpus(), view)
    except (DatasetError, LookupError) as exc:
        fail(str(exc))


def _counted(docs: Iterable[Document], view: ProgressView) -> list[Document]:
    out = []
    for doc in docs:
        out.append(doc)
        view.advance()
    return out


def _summary(m: IndexManifest, verb: str) -> None:
    emb = f", embedder {m.embedder}" if m.embedder else ""
    console.print(
        styled(
            "[green]{}[/] index [bold]{}[/]: {} documents, {} chunks, default mode {}{} "
            "({} s building in total)",
            verb, m.name, f"{m.documents:,}", f"{m.chunks:,}", m.default_mode, emb,
            f"{m.build_seconds:.1f}",
        )
    )  # fmt: skip


@index_app.command("build")
def build(
    path: Path = typer.Argument(None, help="a folder, or a .jsonl/.csv/.txt/.md/.html file"),
    name: str = typer.Option(
        "default",  # veracity.retrieval.defaults.DEFAULT_INDEX (not imported: start-up)
        "--name",
        "-n",
        help="index name (default: 'default', the corpus retrieving methods search offline "
        "when no source is given)",
    ),
    dataset: str = typer.Option(
        None, help="index a benchmark's corpus instead of PATH (e.g. scifact)"
    ),
    mode: str = typer.Option("hybrid", help="default search mode: bm25, dense or hybrid"),
    embedder: str = typer.Option(
        None, help="sentence-transformers model path (default all-MiniLM-L6-v2)"
    ),
    chunk_words: int = typer.Option(200, help="most words per chunk"),
    overlap: int = typer.Option(0, help="words repeated between neighbouring chunks"),
    fields: str = typer.Option(
        None, help="column mapping for JSONL/CSV, e.g. 'text=body,id=uid,date=published'"
    ),
    overwrite: bool = typer.Option(False, help="replace an existing index of that name"),
) -> None:
    """Index documents for offline search."""
    from pydantic import ValidationError

    from veracity.cli.progress import JobProgress
    from veracity.cli.progress_view import ProgressView
    from veracity.nlp.embeddings import EmbedderError
    from veracity.retrieval.defaults import DEFAULT_INDEX
    from veracity.retrieval.local.corpus import build_local_corpus
    from veracity.retrieval.local.index import ChunkingConfig, IndexBuildError

    _mode(mode)
    try:
        chunking = ChunkingConfig(max_words=chunk_words, overlap=overlap)
    except ValidationError as exc:
        fail(f"bad chunking options: {exc.errors()[0]['msg']} ({exc.errors()[0]['loc'][0]})")
    if (path is None) == (dataset is None):
        fail("give either PATH or --dataset NAME")
    job = JobProgress(f"index {name} ({mode})", unit="documents")
    with ProgressView(job, console) as view:
        view.set_stage("reading")
        docs = _read(path, fields, view) if path is not None else _dataset_corpus(dataset, view)
        try:
            corpus = build_local_corpus(
                name, docs, mode=mode, embedder=embedder, chunking=chunking,
                indexes_dir=_indexes_dir(), overwrite=overwrite, progress=view.position,
            )  # fmt: skip
        except IndexBuildError as exc:
            fail(str(exc))
        except EmbedderError as exc:
            fail(str(exc), code=3)
    _summary(corpus.manifest, "built")
    console.print(f"stored in {corpus.folder}")
    if name == DEFAULT_INDEX:
        console.print(
            "this is the default local corpus: retrieving methods search it offline when "
            "no --source is given"
        )


@index_app.command("add")
def add(
    name: str = typer.Argument(..., help="index name"),
    path: Path = typer.Argument(..., help="documents to add (same formats as build)"),
    fields: str = typer.Option(None, help="column mapping for JSONL/CSV"),
) -> None:
    """Add documents to an existing index (ids already indexed are skipped)."""
    from veracity.nlp.embeddings import EmbedderError
    from veracity.retrieval.local.corpus import add_documents
    from veracity.retrieval.local.index import IndexBuildError, IndexCorrupt, IndexNotFound

    docs = _read(path, fields)
    try:
        with console.status(f"adding {len(docs):,} documents…"):
            manifest, added, skipped = add_documents(name, docs, indexes_dir=_indexes_dir())
    except (IndexBuildError, IndexNotFound) as exc:
        fail(str(exc))
    except (IndexCorrupt, EmbedderError) as exc:
        fail(str(exc), code=3)
    console.print(f"added {added:,} documents, skipped {skipped:,} already indexed")
    _summary(manifest, "updated")


@index_app.command("list")
def list_() -> None:
    """List the indexes under the indexes folder."""
    from rich.table import Table
    from rich.text import Text

    from veracity.retrieval.local.corpus import list_indexes
    from veracity.runtime.environment import environment

    root = environment().indexes_dir
    rows = list_indexes(root)
    if not rows:
        console.print(f"no indexes in {root}; build one with `veracity index build PATH --name N`")
        return
    table = Table("name", "mode", "documents", "chunks", "embedder", "updated")
    for name, info in rows:
        if isinstance(info, str):
            table.add_row(name, Text("unreadable", "red"), "", "", "", info)
            continue
        table.add_row(
            name,
            info.default_mode,
            f"{info.documents:,}",
            f"{info.chunks:,}",
            info.embedder or "-",
            info.updated_at.strftime("%Y-%m-%d %H:%M"),
        )
    out.print(table)
    console.print(Text(str(root), "dim"))


@index_app.command("search")
def search(
    name: str = typer.Argument(..., help="index name (see `veracity index list`)"),
    query: str = typer.Argument("", help="free-text query"),
    mode: str = typer.Option(None, help="bm25, dense or hybrid (default: the index's mode)"),
    top_k: int = typer.Option(5, "--top-k", "-k", help="number of results"),
    keyword: list[str] = typer.Option(None, "--keyword", help="required term (repeatable)"),
    any_keyword: bool = typer.Option(False, "--any", help="any keyword suffices (OR)"),
    before: str = typer.Option(None, help="only documents published before YYYY-MM-DD"),
    as_json: bool = typer.Option(False, "--json", help="print results as JSON lines"),
) -> None:
    """Search an index."""
    import datetime as dt

    from pydantic import ValidationError

    from veracity.nlp.embeddings import EmbedderError
    from veracity.retrieval.base import Query
    from veracity.retrieval.local.corpus import LocalCorpus, index_folder
    from veracity.retrieval.local.index import IndexCorrupt, IndexNotFound

    _mode(mode)
    try:
        cutoff = dt.date.fromisoformat(before) if before else None
        q = Query(
            text=query,
            keywords=tuple(keyword or ()),
            operator="OR" if any_keyword else "AND",
            top_k=top_k,
            before=cutoff,
        )
        folder = index_folder(name, _indexes_dir())
    except ValidationError as exc:  # empty query, bad top-k
        fail(f"bad query: {exc.errors()[0]['msg']}")
    except ValueError as exc:  # bad date or index name
        fail(str(exc))
    corpus = LocalCorpus(name, indexes_dir=_indexes_dir())
    try:
        docs = corpus.search_sync(q, mode)  # type: ignore[arg-type]
    except IndexNotFound as exc:
        fail(str(exc))
    except (IndexCorrupt, EmbedderError) as exc:
        fail(str(exc), code=3)
    except SourceError as exc:  # e.g. dense mode on an index built without embeddings
        fail(str(exc))
    if as_json:
        for d in docs:
            out.print_json(d.model_dump_json(), indent=None)
        return
    _results_table(docs, folder.name)


def _results_table(docs: list[Document], name: str) -> None:
    from rich.table import Table
    from rich.text import Text

    if not docs:
        console.print("no results")
        return
    table = Table("#", "score", "document", "passage", title=f"local:{name}")
    for i, d in enumerate(docs, 1):  # every field is data: Text, never markup
        where = str(d.metadata.get("parent_id", d.id))
        head = Text(d.title[:80]).append(f"\n{where}", style="dim")
        if d.published_at:
            head.append(f"\n{d.published_at.date()}", style="dim")
        text = d.text if len(d.text) <= 300 else d.text[:300] + "…"
        table.add_row(str(i), f"{d.score:.3f}", head, text)
    out.print(table)


def _indexes_dir() -> Path:
    """Where named indexes live (``VERACITY_HOME/indexes``)."""
    from veracity.runtime.home import home_paths

    return home_paths().indexes
