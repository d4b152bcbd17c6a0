"""`veracity advfact build` and `veracity advfact flips`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from veracity.cli.app import PLAIN, app, console, fail, out
from veracity.cli.common import BASE_URL_OPTION, PROVIDER_OPTION, ensure_model
from veracity.core.errors import ConfigError, DatasetError, RunStoreError

advfact_app = typer.Typer(
    help="ToE's adversarial robustness set (AdvFact).",
    **PLAIN,  # type: ignore[arg-type]
)
app.add_typer(advfact_app, name="advfact")


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
    from veracity.evaluation.advfact import BuildOptions, build_advfact
    from veracity.runtime import build_llm, resolve_config

    try:
        cfg = resolve_config(
            None, flags={"llm": {"model": model, "base_url": base_url, "provider": provider}}
        )
        options = BuildOptions(
            n=n, seed=seed, split=split, passages_per_claim=passages, index=index,
            concurrency=concurrency,
        )  # fmt: skip
    except (ConfigError, ValueError) as exc:
        fail(str(exc))
    ensure_model(cfg.llm)
    llm = build_llm(cfg)
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
