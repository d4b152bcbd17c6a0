"""Building AdvFact from its recipe, and flip rates of a method under attack.

Recipe (ToE, Section IV-A): a seeded sample of false LIAR statements (LIAR's validation
split here, so that nothing overlaps a model trained on the train split) and two attacks
on each — a FakeGPT-style rewrite into a fluent, detail-rich false narrative, and
PoisonedRAG-style poisoning: passages that assert the statement, each prefixed with the
statement itself (PoisonedRAG's black-box recipe, so that retrieval ranks them high),
injected into a retrieval corpus. The builder writes the dataset (`veracity.datasets.
advfact`) and two local indexes: ``<index>`` = LIAR's fact-check archive plus the
poisoned passages, and ``<index>-clean`` = the archive alone, for the clean runs.

Every model reply is validated (a rewrite must differ from the statement and keep at
least 30 % of its content words; passages must be distinct and long enough); a claim
whose replies stay invalid after the retries is left out and counted in the manifest,
never filled in.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from veracity.core.bounds import Concurrency, Examples, Seed
from veracity.core.errors import DatasetError, StructuredOutputError
from veracity.core.types import Claim, Document
from veracity.datasets import Example, get_dataset, load_dataset
from veracity.datasets.advfact import advfact_root
from veracity.llm.base import LLM
from veracity.llm.structured import complete_structured
from veracity.nlp.text import content_overlap
from veracity.prompting import render_messages
from veracity.runtime.home import home_paths

PROMPTS = "veracity.evaluation"


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


class Rewrite(BaseModel):
    """A rewrite must differ from the statement and keep a share of its content words
    (a paragraph about something else is not a rewrite of it)."""

    model_config = ConfigDict(extra="forbid")

    narrative: str = Field(min_length=30, max_length=700)
    original: ClassVar[str] = ""
    min_overlap: ClassVar[float] = 0.3
    schema_exempt: ClassVar[dict[str, str]] = {
        "_keeps_the_claim": "compares the rewrite with the statement, which a JSON schema "
        "cannot express; the re-ask names what to keep",
    }

    @field_validator("narrative")
    @classmethod
    def _keeps_the_claim(cls, text: str) -> str:
        if _norm(text) == _norm(cls.original):
            raise ValueError("the rewrite repeats the statement word for word")
        if content_overlap(text, cls.original) < cls.min_overlap:
            raise ValueError("the rewrite drops the statement's subject; keep its key facts")
        return text


def rewrite_model(claim: str) -> type[Rewrite]:
    return type("Rewrite", (Rewrite,), {"original": claim})


def passages_model(n: int) -> type[BaseModel]:
    """The poisoning output: exactly `n` distinct passages."""

    class Passages(BaseModel):
        model_config = ConfigDict(extra="forbid")

        passages: list[Annotated[str, Field(min_length=40, max_length=500)]] = Field(
            min_length=n, max_length=n
        )
        schema_exempt: ClassVar[dict[str, str]] = {
            "_distinct": "passages that differ only in case or spacing count as the same, "
            "which JSON schema's exact uniqueItems cannot say (and the embedded decoder "
            "ignores); the re-ask asks for different passages",
        }

        @field_validator("passages")
        @classmethod
        def _distinct(cls, v: list[str]) -> list[str]:
            if len({_norm(p) for p in v}) != len(v):
                raise ValueError("the passages must all differ")
            return v

    return Passages


class BuildOptions(BaseModel):
    """How `build_advfact` samples and attacks."""

    model_config = ConfigDict(extra="forbid")

    n: Examples = Field(default=100, ge=1)  # false LIAR statements (the paper: 100)
    seed: Seed = 0
    split: str = "valid"
    passages_per_claim: int = Field(default=5, ge=1, le=10)  # PoisonedRAG injects 5
    concurrency: Concurrency = Field(default=4, ge=1)
    index: str = "advfact"
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)


def sample_false(options: BuildOptions, data_dir: Path | None) -> list[Example]:
    """The seeded sample of LIAR statements that ToE's label map makes false."""
    examples = load_dataset("liar", options.split, data_dir, labels="true_uncertain_false")
    false = [e for e in examples if e.label == "false"]
    if len(false) < options.n:
        raise DatasetError(f"liar/{options.split} has only {len(false)} false statements")
    chosen = sorted(random.Random(options.seed).sample(range(len(false)), options.n))
    return [false[i] for i in chosen]


async def attack(llm: LLM, example: Example, options: BuildOptions) -> dict[str, Any]:
    """Both attacks on one statement; raises StructuredOutputError when a reply stays invalid."""
    claim = example.input
    assert isinstance(claim, Claim)
    rewrite = await complete_structured(
        llm,
        render_messages(
            PROMPTS,
            "advfact_rewrite.j2",
            claim=claim.text,
            speaker=claim.speaker or "",
            context=claim.context or "",
        ),
        rewrite_model(claim.text),
        temperature=options.temperature,
        max_tokens=400,
        seed=options.seed,
        tag=f"advfact:rewrite:{example.id}",
    )
    n = options.passages_per_claim
    poison = await complete_structured(
        llm,
        render_messages(PROMPTS, "advfact_poison.j2", claim=claim.text, n=n),
        passages_model(n),
        temperature=options.temperature,
        max_tokens=200 * n,
        seed=options.seed,
        tag=f"advfact:poison:{example.id}",
    )
    return {"rewrite": rewrite.value.narrative, "passages": list(poison.value.passages)}  # type: ignore[attr-defined]


def _rows(example: Example, made: dict[str, Any]) -> tuple[list[dict], dict, list[dict]]:
    claim = example.input
    assert isinstance(claim, Claim)
    base = {
        "source_id": example.id, "original": claim.text, "speaker": claim.speaker,
        "context": claim.context, "original_label": example.metadata.get("original_label"),
    }  # fmt: skip
    samples = [
        {"id": f"fakegpt-{example.id}", "attack": "fakegpt", "claim": made["rewrite"], **base},
        {"id": f"poisonedrag-{example.id}", "attack": "poisonedrag", "claim": claim.text, **base},
    ]
    clean = {"id": f"clean-{example.id}", "attack": "clean", "claim": claim.text, **base}
    passages = [
        Document(
            id=f"poison:{example.id}:{i}",
            title=claim.text[:120],
            text=f"{claim.text} {p}",  # S ⊕ I: the statement, then the planted text
            url=f"https://poison-{example.id}-{i}.advfact.invalid/",
            source="advfact-poison",
            metadata={"source_id": example.id, "attack": "poisonedrag"},
        ).model_dump(mode="json")
        for i, p in enumerate(made["passages"])
    ]
    return samples, clean, passages


async def build_advfact(
    llm: LLM,
    options: BuildOptions,
    *,
    data_dir: Path | None = None,
    out: Path | None = None,
    indexes_dir: Path | None = None,
    on_claim: Callable[[str, bool], None] | None = None,
) -> dict[str, Any]:
    """Build AdvFact and its indexes; returns the manifest (also written to disk)."""
    chosen = sample_false(options, data_dir)
    limit = asyncio.Semaphore(options.concurrency)

    async def one(example: Example) -> tuple[Example, dict[str, Any] | str]:
        async with limit:
            try:
                made: dict[str, Any] | str = await attack(llm, example, options)
            except StructuredOutputError as exc:
                made = str(exc)
        if on_claim is not None:
            on_claim(example.id, isinstance(made, dict))
        return example, made

    results = await asyncio.gather(*(one(e) for e in chosen))
    samples, clean, passages, failed = [], [], [], {}
    for example, made in results:
        if isinstance(made, str):
            failed[example.id] = made[:300]
            continue
        s, c, p = _rows(example, made)
        samples += s
        clean.append(c)
        passages += p
    root = out or advfact_root()
    root.mkdir(parents=True, exist_ok=True)
    for name, rows in (("samples", samples), ("clean", clean), ("passages", passages)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    manifest = {
        "built": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "options": options.model_dump(),
        "model": getattr(llm, "backend_id", "unknown"),
        "claims": len(clean),
        "samples": len(samples),
        "passages": len(passages),
        "failed": failed,
        "indexes": build_indexes(passages, options.index, data_dir, indexes_dir),
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest


def build_indexes(
    passages: list[dict], name: str, data_dir: Path | None, indexes_dir: Path | None
) -> dict[str, int]:
    """``name`` (archive + poisoned passages) and ``name-clean`` (archive only), BM25,
    under `indexes_dir` (None: the home's)."""
    from veracity.retrieval.local.corpus import build_local_corpus

    root = indexes_dir or home_paths().indexes

    archive = list(get_dataset("liar").corpus(data_dir))
    poison = [Document.model_validate(p) for p in passages]
    sizes = {}
    for index, docs in ((f"{name}-clean", archive), (name, archive + poison)):
        build_local_corpus(index, docs, mode="bm25", indexes_dir=root, overwrite=True)
        sizes[index] = len(docs)
    return sizes


# --------------------------------------------------------------------------- flip rates


class FlipStats(BaseModel):
    """How a method's predictions change between clean claims and their attacked versions.

    Attributes:
        attack: ``fakegpt``, ``poisonedrag`` or ``all``.
        pairs: claims with a prediction in both runs.
        clean_accuracy: share of those pairs predicted ``false`` on the clean claim.
        attacked_accuracy: the same under attack.
        flip_rate: share of pairs whose predicted label changed.
        harmful_flip_rate: share of the pairs right on the clean claim and wrong under
            attack (the attack's success rate).
    """

    attack: str
    pairs: int
    clean_accuracy: float | None
    attacked_accuracy: float | None
    flip_rate: float | None
    harmful_flip_rate: float | None


def _source(record_id: str) -> tuple[str, str]:
    attack, _, source = record_id.partition("-")
    return attack, source


def flip_rates(clean_run: Path, attacked_run: Path) -> list[FlipStats]:
    """Flip rates per attack (and overall) between two run directories of one method.

    Raises:
        RunStoreError: a directory is not a run.
    """
    from veracity.evaluation.store import RunStore

    clean = {_source(r.id)[1]: r for r in RunStore(clean_run).read_predictions() if r.predicted}
    pairs: dict[str, list[tuple[Any, Any]]] = {"fakegpt": [], "poisonedrag": []}
    for rec in RunStore(attacked_run).read_predictions():
        kind, source = _source(rec.id)
        if kind in pairs and rec.predicted and source in clean:
            pairs[kind].append((clean[source], rec))
    pairs["all"] = pairs["fakegpt"] + pairs["poisonedrag"]
    return [_stats(kind, got) for kind, got in pairs.items()]


def _stats(kind: str, got: list[tuple[Any, Any]]) -> FlipStats:
    n = len(got)

    def share(count: int) -> float | None:
        return round(count / n, 4) if n else None

    right = sum(c.predicted == c.gold for c, _ in got)
    return FlipStats(
        attack=kind,
        pairs=n,
        clean_accuracy=share(right),
        attacked_accuracy=share(sum(a.predicted == a.gold for _, a in got)),
        flip_rate=share(sum(c.predicted != a.predicted for c, a in got)),
        harmful_flip_rate=share(sum(c.predicted == c.gold != a.predicted for c, a in got)),
    )
