"""ToE's commands: `veracity train toe` (the retrieval policy and networks, trained on a
labelled split) and `veracity advfact build|flips` (ToE's adversarial robustness set).

ToE's front end on the command line, added through the ``veracity.commands`` entry points
``train.toe`` and ``advfact`` (see `veracity.cli.plugins`); nothing imports it. Rich
and the method's own code load inside the commands, so ``--help`` stays fast.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from veracity.cli.app import PLAIN, console, fail, leave_interrupted, out, styled
from veracity.cli.common import (
    BASE_URL_OPTION,
    MODEL_OPTION,
    PROVIDER_OPTION,
    SOURCE_OPTION,
    ensure_model,
    parse_source_options,
)
from veracity.core.errors import ConfigError, DatasetError, EvalError, RunStoreError
from veracity.core.types import Usage, cost_text

if TYPE_CHECKING:
    from rich.table import Table


def train_toe(
    dataset: str = typer.Option("liar", "--dataset", "-d", help="registered dataset"),
    split: str = typer.Option("train", help="split to train on"),
    limit: int = typer.Option(None, help="train on at most N claims"),
    sample: bool = typer.Option(False, "--sample/--first", help="a seeded sample or the first N"),
    seed: int = typer.Option(0, help="seed for --sample and for the networks"),
    checkpoint: str = typer.Option(
        "default", help="checkpoint name (under VERACITY_HOME/checkpoints/toe) or a folder"
    ),
    config: Path = typer.Option(None, help="run YAML with method_config, llm and sources"),
    source: list[str] = SOURCE_OPTION,
    model: str = MODEL_OPTION,
    base_url: str = BASE_URL_OPTION,
    provider: str = PROVIDER_OPTION,
    data_dir: Path = typer.Option(None, help="benchmark data directory"),
    freeze_policy: bool = typer.Option(
        False, "--freeze-policy", help="keep the retrieval policy as it is (no GRPO updates)"
    ),
    fit: bool = typer.Option(True, "--fit/--no-fit", help="train the networks after collecting"),
    fit_only: bool = typer.Option(False, help="train on what was collected; check no claims"),
    fresh: bool = typer.Option(False, help="refuse to resume an existing checkpoint"),
    progress: bool = typer.Option(True, help="show the progress bar"),
) -> None:
    """Run ToE over labelled claims (the LLM judge scoring nodes, the policy learning
    online), keep every tree, then train the evaluation and aggregation networks.
    Re-run the same command to resume."""
    from veracity.methods.checkpoints import CheckpointError

    try:
        trainer, examples, info, space = _setup(
            dataset, split, limit, sample, seed, checkpoint, config, source, data_dir,
            {"model": model, "base_url": base_url, "provider": provider}, freeze_policy, fresh,
        )  # fmt: skip
    except (ConfigError, DatasetError, EvalError, CheckpointError) as exc:
        fail(str(exc))
    done = trainer.done()
    todo = [e for e in examples if e.id not in done]
    console.print(
        f"toe training: {len(examples)} claims of {dataset}/{split}, {len(done)} already "
        f"collected; checkpoint {trainer.folder}"
    )
    if not fit_only and todo:
        try:
            _collect(trainer, examples, info, space, len(todo), progress)
        except KeyboardInterrupt:
            console.print(
                styled(
                    "\n[yellow]interrupted[/]: {} of {} claims are collected in {}. Run the same "
                    "command again to resume.",
                    len(trainer.done()), len(examples), trainer.folder,
                ),
                soft_wrap=True,
            )  # fmt: skip
            leave_interrupted()
    if fit or fit_only:
        try:
            metrics = trainer.fit({"dataset": dataset, "split": split, "claims": len(examples)})
        except CheckpointError as exc:
            fail(str(exc))
        out.print(_metrics_table(metrics, trainer))


def _setup(
    dataset: str,
    split: str,
    limit: int | None,
    sample: bool,
    seed: int,
    checkpoint: str,
    config: Path | None,
    source: list[str] | None,
    data_dir: Path | None,
    llm_flags: dict[str, Any],
    freeze_policy: bool,
    fresh: bool,
) -> tuple[Any, list, Any, Any]:
    from veracity.datasets import load_dataset
    from veracity.evaluation.prepare import open_dataset, select_examples
    from veracity.methods.checkpoints import checkpoint_folder
    from veracity.methods.toe.training import ToETrainer
    from veracity.runtime import build_run, layered_config, resolve_spec

    flags = {
        "method": "toe",
        "labels": "true_uncertain_false",
        "llm": llm_flags,
        "sources": parse_source_options(source or []) or None,
    }
    cfg = layered_config(config, flags=flags)
    # the judge scores and the rules aggregate while collecting: they are the teachers
    teach = {
        "scorer": "llm_judge", "aggregator": "rules", "checkpoint": None, "trained_on": None,
        "seed": seed,
    }  # fmt: skip
    cfg = cfg.with_overrides({"method_config": {**teach, "freeze_policy": freeze_policy}})
    spec = resolve_spec(cfg)
    ensure_model(spec.llm)
    run = build_run(spec)
    method = run.method
    root = method.config.checkpoints_dir or method.home_paths("training").checkpoints
    folder = checkpoint_folder("toe", checkpoint, root)
    trainer = ToETrainer.open(method, folder, fresh=fresh)
    info = open_dataset(dataset).info
    all_examples = load_dataset(
        dataset, split, data_dir or cfg.data_dir, labels="true_uncertain_false"
    )
    examples = select_examples(all_examples, limit, sample, seed)
    return trainer, examples, info, method.label_space


def _collect(trainer: Any, examples: list, info: Any, space: Any, todo: int, show: bool) -> None:
    from veracity.cli.progress import JobProgress, Part
    from veracity.cli.progress_view import ProgressView
    from veracity.core.infra import run_interruptible
    from veracity.evaluation.training import collect

    total = Usage()
    errors = 0
    job = JobProgress("toe · collecting trees", total=len(examples), unit="claims")
    job.advance(len(examples) - todo, earlier=True)  # collected before: not in the pace
    with ProgressView(job, console, enabled=show) as view, view.watching():

        def on_record(rec: dict, verdict: Any) -> None:
            nonlocal errors
            total.add(verdict.usage)
            errors += int(bool(rec.get("error")))
            stats = [
                Part(f"{total.total_tokens:,} tok", 1),
                Part(cost_text(total.cost_usd, total.unpriced_llm_calls, currency="$"), 2),
                Part(f"GRPO updates {trainer.method.models.policy.updates}", 3),
            ]
            if errors:
                stats.append(Part(f"{errors} errors", 6, "yellow"))
            view.item_done(stats=stats, usage=verdict.usage)

        # Ctrl-C stops at once, without waiting for a model call in a worker thread
        run_interruptible(collect(trainer, examples, info, space, on_record))


def _metrics_table(metrics: dict[str, Any], trainer: Any) -> Table:
    from rich.table import Table

    table = Table("part", "result", title=f"checkpoint {trainer.folder}")
    for part in ("eval_net", "agg_net", "policy"):
        m = metrics.get(part) or {}
        if "loss_last" in m:
            text = (
                f"{m['samples']} samples, {m['epochs']} epochs, "
                f"loss {m['loss_first']:.4f} → {m['loss_last']:.4f}"
            )
        elif "skipped" in m:
            text = f"not trained: {m['skipped']}"
        else:
            text = f"{m.get('updates', 0)} GRPO updates over {m.get('claims_seen', 0)} claims"
        table.add_row(part, text)
    return table


advfact_app = typer.Typer(
    help="ToE's adversarial robustness set (AdvFact).",
    **PLAIN,  # type: ignore[arg-type]
)


@advfact_app.command("build")
def build(
    n: int = typer.Option(100, help="false LIAR statements to attack"),
    seed: int = typer.Option(0, help="sampling seed"),
    split: str = typer.Option("valid", help="LIAR split to sample from"),
    passages: int = typer.Option(5, help="poisoned passages per statement"),
    index: str = typer.Option("advfact", help="name of the poisoned index (and NAME-clean)"),
    out_dir: Path = typer.Option(
        None, "--out", help="where to write the set (default VERACITY_HOME/datasets/advfact)"
    ),
    data_dir: Path = typer.Option(None, help="benchmark data directory (LIAR)"),
    model: str = typer.Option(None, help="model that writes the attacks"),
    base_url: str = BASE_URL_OPTION,
    provider: str = PROVIDER_OPTION,
    concurrency: int = typer.Option(4, help="statements attacked at once"),
) -> None:
    """Build AdvFact: FakeGPT-style rewrites and PoisonedRAG-style poisoned passages over a
    seeded sample of false LIAR statements, plus the poisoned and clean local indexes."""
    from pydantic import ValidationError
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from veracity.core.config import validation_message
    from veracity.evaluation.advfact import BuildOptions, build_advfact
    from veracity.runtime import build_llm, resolve_spec

    try:
        spec = resolve_spec(
            None, flags={"llm": {"model": model, "base_url": base_url, "provider": provider}}
        )
        options = BuildOptions(
            n=n, seed=seed, split=split, passages_per_claim=passages, index=index,
            concurrency=concurrency,
        )  # fmt: skip
    except ValidationError as exc:  # one line per field, not pydantic's report
        fail(validation_message(exc))
    except (ConfigError, ValueError) as exc:
        fail(str(exc))
    ensure_model(spec.llm)
    llm = build_llm(spec)
    columns = (TextColumn("advfact"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("build", total=n)
        try:
            manifest = asyncio.run(
                build_advfact(
                    llm,
                    options,
                    data_dir=data_dir,
                    out=out_dir,
                    on_claim=lambda _id, _ok: bar.advance(task),
                )
            )
        except DatasetError as exc:
            fail(str(exc))
    table = Table("built", "count")
    for key in ("claims", "samples", "passages"):
        table.add_row(key, str(manifest[key]))
    table.add_row("claims left out (invalid replies)", str(len(manifest["failed"])))
    for name, size in manifest["indexes"].items():
        table.add_row(f"index {name}", f"{size:,} documents")
    out.print(table)


@advfact_app.command("flips")
def flips(
    clean_run: Path = typer.Argument(..., help="run directory of the method on split clean"),
    attacked_run: Path = typer.Argument(..., help="run directory on split all (or one attack)"),
) -> None:
    """Flip rates of one method between the clean claims and their attacked versions."""
    from rich.table import Table

    from veracity.evaluation.advfact import flip_rates

    try:
        stats = flip_rates(clean_run, attacked_run)
    except RunStoreError as exc:
        fail(str(exc))
    table = Table("attack", "pairs", "clean acc.", "attacked acc.", "flip rate", "harmful flips")

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.3f}"

    for s in stats:
        table.add_row(
            s.attack, str(s.pairs), f(s.clean_accuracy), f(s.attacked_accuracy),
            f(s.flip_rate), f(s.harmful_flip_rate),
        )  # fmt: skip
    out.print(table)
