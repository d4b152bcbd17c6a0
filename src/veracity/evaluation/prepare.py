"""Preparing an evaluation run: everything that can fail before any example is checked.

`prepare_run` resolves the dataset and split, the method and its label space, the
gold-label mapping, the input kind, the sources and the model, and refuses to resume a
run directory that holds a different run.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veracity.core import registry
from veracity.core.config import VARIANT_KEYS, RunConfig
from veracity.core.errors import ConfigError, DatasetError, EvalError, LabelError
from veracity.core.labels import LabelMap, LabelSpace, get_label_map, get_label_space
from veracity.core.types import Claim
from veracity.datasets.base import Dataset, DatasetInfo, Example
from veracity.evaluation.document_task import DOCUMENT_KIND, document_method
from veracity.evaluation.store import RunStore, redact
from veracity.llm.base import LLM
from veracity.runtime import CachePaths, RunSpec
from veracity.runtime.service import KIND_REFUSED, CheckRefused, Veracity

# Config keys that must match when a run directory is resumed: what a variant may set,
# except what a later session may change (a larger limit, more repeats, a stand-in; the
# seed is compared only when it chose the examples), plus the method config and variant.
_RESUME_KEYS = (
    *(k for k in VARIANT_KEYS if k not in ("limit", "repeats", "stand_in", "seed")),
    "method_config",
    "variant",
)
_RESUME_LLM_KEYS = ("backend", "model", "base_url", "provider")


@dataclass
class PreparedRun:
    """Everything `execute` needs, resolved and checked."""

    config: RunConfig
    method: Any  # a veracity.methods.base.Method
    space: LabelSpace
    info: DatasetInfo
    examples: list[Example]
    gold: dict[str, tuple[str, str]]  # example id -> (gold in method space, original)
    store: RunStore
    prompts: dict[str, str] = field(default_factory=dict)  # template -> hash
    notes: list[str] = field(default_factory=list)  # what the user should know before it runs
    caches: CachePaths | None = None  # the caches workers of other engines open too
    spec: RunSpec | None = None  # the effective run, recorded in run.json (with `config`)

    @property
    def todo(self) -> list[Example]:
        done = {r.id for r in self.store.read_predictions()}
        return [e for e in self.examples if e.id not in done]


# --------------------------------------------------------------------------- preparation


def open_dataset(name: str) -> Dataset:
    """The registered dataset `name` as an object with `info` and `load`."""
    if name not in registry.datasets:
        known = ", ".join(registry.datasets.names()) or "none yet"
        raise EvalError(f"dataset {name!r} is not registered (registered: {known})")
    obj = registry.datasets.get(name)
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "load")):
        obj = obj()  # a loader class or a factory
    if not isinstance(obj, Dataset):
        raise EvalError(f"dataset {name!r} does not provide `info` and `load` (see datasets/base)")
    return obj


def select_examples(
    examples: Sequence[Example],
    limit: int | None,
    sample: bool,
    seed: int,
    *,
    per_class: int | None = None,
    class_of: Callable[[Example], str] | None = None,
) -> list[Example]:
    """The examples a run checks, in dataset order.

    `limit` keeps the first `limit` examples, or with `sample` a seeded random sample of
    `limit`. `per_class` then draws a balanced, seeded sample from those: `per_class`
    examples of each class (`class_of`), every example of a smaller class.
    """
    ids = [e.id for e in examples]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise EvalError(f"the dataset has duplicate example ids (e.g. {dup!r}); runs cannot resume")
    if limit is not None and limit < 1:
        raise EvalError("--limit must be at least 1")
    pool = list(examples)
    if limit is not None and limit < len(examples):
        if sample:
            chosen = sorted(random.Random(seed).sample(range(len(examples)), limit))
            pool = [examples[i] for i in chosen]
        else:
            pool = pool[:limit]
    if per_class is None:
        return pool
    if per_class < 1 or class_of is None:
        raise EvalError("--sample-per-class needs a count of at least 1 and the gold classes")
    by_class: dict[str, list[int]] = {}
    for i, example in enumerate(pool):
        by_class.setdefault(class_of(example), []).append(i)
    rng = random.Random(seed)
    keep: list[int] = []
    for cls in sorted(by_class):
        members = by_class[cls]
        keep += members if len(members) <= per_class else rng.sample(members, per_class)
    return [pool[i] for i in sorted(keep)]


def gold_mapper(dataset_space: str, method_space: str) -> Callable[[str], str]:
    """Map gold labels from the dataset's space into the method's, or explain why not."""
    src = get_label_space(dataset_space)
    if dataset_space == method_space:
        return src.parse
    try:
        return get_label_map(dataset_space, method_space)
    except LabelError:
        from veracity.core.labels import LABEL_MAPS

        targets = sorted({m.target for m in LABEL_MAPS.values() if m.source == dataset_space})
        hint = f"--labels {' or --labels '.join(targets)}" if targets else "register a LabelMap"
        raise EvalError(
            f"the dataset's labels are in {dataset_space!r} but the method answers in "
            f"{method_space!r}, and no label map connects them; choose the method's label "
            f"space with {hint} (or --labels {dataset_space} if the method accepts it)"
        ) from None


def check_resumable(store: RunStore, cfg: RunConfig) -> None:
    """Refuse to resume a run directory that was made with a different config."""
    if not store.exists():
        return
    old = store.read_config()
    new = redact(cfg.model_dump(mode="json"))  # compared as stored: without secrets
    diffs = [k for k in _RESUME_KEYS if old.get(k) != new.get(k)]
    old_llm, new_llm = old.get("llm") or {}, new["llm"]
    diffs += [f"llm.{k}" for k in _RESUME_LLM_KEYS if old_llm.get(k) != new_llm.get(k)]
    if (cfg.sample or cfg.sample_per_class) and old.get("seed") != new["seed"]:
        diffs.append("seed")
    if (old.get("repeats") or 1) > 1 and cfg.repeats == 1:
        diffs.append("repeats (it holds repeated runs)")
    if diffs:
        raise EvalError(
            f"{store.path} holds a run with a different {', '.join(diffs)}; resume it with "
            f"`veracity eval --out {store.path}` or choose another --out directory"
        )


def prepare_run(
    cfg: RunConfig,
    out: str | Path,
    *,
    llm: LLM | None = None,
    replay_from: str | Path | None = None,
    ready: Callable[[RunSpec], None] | None = None,
) -> PreparedRun:
    """Resolve and check a run before any example is checked.

    The model, sources and method come from the service's `plan_run`, so an evaluation
    is refused what a check is refused (before anything is built), with the run
    directory's caches (or, with `replay_from`, another run's).

    Args:
        cfg: the resolved config (variant and flags already applied).
        out: the run directory (created; resumed when it holds the same run).
        llm: the model to use (tests pass a ScriptedLLM); otherwise the configured one.
        replay_from: another run directory whose LLM and HTTP caches are read instead of
            this run's (set ``cfg.llm.cache_mode`` to "replay" to forbid live calls).
        ready: called with the run's spec before its model is built (the CLI pulls a
            missing model there).
    """
    if not cfg.dataset:
        raise EvalError("no dataset given: use --dataset NAME or `dataset:` in the config")
    store = RunStore(out)
    ds = open_dataset(cfg.dataset)
    info = ds.info
    split = cfg.split or info.splits[0]
    if split not in info.splits:
        raise EvalError(f"dataset {info.name!r} has splits {list(info.splits)}, not {split!r}")
    cfg = cfg.model_copy(update={"split": split})
    caches = _cache_store(store, replay_from)
    paths = CachePaths(
        llm=caches.llm_cache_path,
        http=caches.http_cache_path,
        state=store.path / "state",  # this run's own, also when another run's caches replay
        namespace=f"{cfg.dataset}/{split}",
    )
    # a document task checks each document's claims with the method
    needed = "claim" if info.input_kind == DOCUMENT_KIND else info.input_kind
    service = Veracity(cfg, llm=llm, caches=paths, ready=ready)
    try:
        run = service.plan_run(needed, prefer_labels=info.label_space)
    except CheckRefused as exc:
        if exc.title != KIND_REFUSED:
            raise EvalError(str(exc)) from exc
        kinds = registry.methods.get(cfg.method).input_kinds
        raise EvalError(
            f"{cfg.method!r} checks {', '.join(kinds)}, {info.name!r} holds {info.input_kind}s"
            + (" (a document task checks their claims)" if needed != info.input_kind else "")
        ) from None
    except ConfigError as exc:
        raise EvalError(str(exc)) from exc
    if run.spec.method_config.needs_given_evidence and not cfg.gold_evidence:
        raise EvalError(
            f"{cfg.method} is configured for given evidence (method_config.evidence: given) "
            "but the run hands none over; add --gold-evidence (or `gold_evidence: true`)"
        )
    # the run as given, with what resolving chose: what the run directory records
    method, cfg = run.method, run.spec.given
    store.acquire()  # one session at a time; repairs a torn last line before any read
    try:
        prepared = _finish_preparing(cfg, ds, store, method, run.prompts, run.notes, paths)
        if info.input_kind == DOCUMENT_KIND:  # each response's claims found, checked, scored
            task = document_method(method, run.llm, prepared.config, prepared.examples)
            prepared.method = task
            prepared.notes += [n for n in task.setup_notes if n not in prepared.notes]
    except BaseException:
        store.release()
        raise
    prepared.spec = run.spec
    return prepared


def _finish_preparing(
    cfg: RunConfig,
    ds: Dataset,
    store: RunStore,
    method: Any,
    prompts: dict[str, str],
    setup_notes: list[str],
    caches: CachePaths,
) -> PreparedRun:
    info, space, split = ds.info, method.label_space, cfg.split or ds.info.splits[0]
    check_resumable(store, cfg)
    try:
        # resolved by the loader, only if it reads from the data directory (a dataset
        # given by its file path does not need one)
        root = Path(cfg.data_dir) if cfg.data_dir is not None else None
        loaded = ds.load(split, root, **cfg.dataset_options)
        class_of = None
        if cfg.sample_per_class is not None:  # balance the classes the metrics count
            all_gold = map_gold(loaded, space.name, cfg.gold_map)
            class_of = lambda e: all_gold[e.id][0]  # noqa: E731
        examples = select_examples(
            loaded, cfg.limit, cfg.sample, cfg.seed,
            per_class=cfg.sample_per_class, class_of=class_of,
        )  # fmt: skip
    except TypeError as exc:  # an option the loader does not take
        raise EvalError(f"dataset_options for {info.name!r}: {exc}") from exc
    except (DatasetError, ConfigError) as exc:
        raise EvalError(str(exc)) from exc
    notes = list(setup_notes)
    if cfg.gold_evidence:
        examples, note = gold_evidence_examples(examples)
        notes += [note] if note else []
    gold = map_gold(examples, space.name, cfg.gold_map)
    return PreparedRun(cfg, method, space, info, examples, gold, store, prompts, notes, caches)


def gold_evidence_examples(examples: Sequence[Example]) -> tuple[list[Example], str | None]:
    """The examples that have gold evidence, each with it handed over, and a note
    saying how many were left out for having none.

    Raises:
        EvalError: no example has gold evidence (the dataset cannot run this setting).
    """
    kept = [with_gold_evidence(e) for e in examples if e.evidence or not isinstance(e.input, Claim)]
    if examples and not kept:
        with_gold_evidence(examples[0])  # raises, naming the example
    left = len(examples) - len(kept)
    note = None
    if left:
        note = f"{left} of {len(examples)} examples have no gold evidence and are left out"
    return kept, note


def with_gold_evidence(example: Example) -> Example:
    """The example with its gold evidence handed to the method as `Claim.evidence`.

    Raises:
        EvalError: the example is not a claim, or the dataset gives it no evidence texts.
    """
    item = example.input
    if not isinstance(item, Claim):
        raise EvalError(f"gold evidence goes with claims; {example.id} is a {item.kind}")
    if not example.evidence:
        raise EvalError(
            f"example {example.id} has no gold evidence texts; this dataset cannot run the "
            "gold-evidence setting"
        )
    return example.model_copy(
        update={"input": item.model_copy(update={"evidence": example.evidence})}
    )


def _cache_store(store: RunStore, replay_from: str | Path | None) -> RunStore:
    """The run directory whose caches the run reads: its own, or the one replayed."""
    if replay_from is None:
        return store
    caches = RunStore(replay_from)
    if caches.path.resolve() == store.path.resolve():
        raise EvalError("replay from another run directory than the one being written")
    if not caches.llm_cache_path.is_file():
        raise EvalError(f"{caches.path} has no LLM cache to replay")
    return caches


def map_gold(
    examples: Sequence[Example], method_space: str, table: dict[str, str] | None = None
) -> dict[str, tuple[str, str]]:
    """Example id -> (gold in the method's space, gold as given), via `table` if given."""
    mappers: dict[str, Callable[[str], str]] = {}
    gold = {}
    for ex in examples:
        if ex.label_space not in mappers and table is not None:
            try:
                mappers[ex.label_space] = LabelMap(
                    name="config gold_map", source=ex.label_space, target=method_space, table=table
                )
            except ValidationError as exc:
                raise EvalError(f"gold_map in the config: {exc}") from exc
        elif ex.label_space not in mappers:
            mappers[ex.label_space] = gold_mapper(ex.label_space, method_space)
        try:
            gold[ex.id] = (mappers[ex.label_space](ex.label), ex.label)
        except LabelError as exc:
            raise EvalError(f"example {ex.id!r}: {exc}") from exc
    return gold
