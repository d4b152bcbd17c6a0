"""`veracity batch` through the command line (scripted model, local engine)."""

from __future__ import annotations

import asyncio
import csv
import json

import pytest
from _eval_fixtures import echo_llm_for_batch
from typer.testing import CliRunner

from veracity.cli import app
from veracity.cli.common import engine_for
from veracity.core.errors import ConfigError
from veracity.evaluation.store import RunStore

runner = CliRunner()


@pytest.fixture
def llm(monkeypatch):
    """Every model the CLI builds is one echoing scripted model, cached in the run dir."""
    return echo_llm_for_batch(monkeypatch)


def _say(i: int) -> str:
    return "SUPPORTED" if i % 3 else "REFUTED"


def _jsonl(path, n: int, start: int = 0) -> None:
    rows = [{"claim_id": f"c{i}", "claim": f"claim {i} say:{_say(i)}"} for i in range(start, n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


BASE = ["--method", "direct", "--labels", "supported_refuted", "--no-progress"]
COLUMNS = ["--text", "claim", "--id", "claim_id"]


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_batch_writes_every_row_in_input_order_and_resumes(tmp_path, llm):
    src, out = tmp_path / "claims.jsonl", tmp_path / "out.jsonl"
    _jsonl(src, 7)
    result = runner.invoke(app, ["batch", str(src), "--out", str(out), *BASE, *COLUMNS])
    assert result.exit_code == 0, result.output
    got = _lines(out.read_text())
    assert [r["id"] for r in got] == [f"c{i}" for i in range(7)]
    assert [r["predicted"] for r in got] == [_say(i) for i in range(7)]
    assert all(r["status"] == "ok" and "gold" not in r for r in got)
    assert "REFUTED 3, SUPPORTED 4" in result.output and "7 / 0 / 0 / 0" in result.output
    store = RunStore(tmp_path / "out.run")  # the run directory beside the results
    assert len(store.read_predictions()) == 7 and len(store.read_sessions()) == 1
    assert len(llm.calls) == 7

    _jsonl(src, 10)  # three more rows: only they are checked
    again = runner.invoke(app, ["batch", str(src), "--out", str(out), *BASE, *COLUMNS])
    assert again.exit_code == 0, again.output
    assert [r["id"] for r in _lines(out.read_text())] == [f"c{i}" for i in range(10)]
    assert len(llm.calls) == 10 and len(store.read_sessions()) == 2


def test_standard_input_streams_results_and_a_resume_replays_the_done_rows(tmp_path, llm):
    rows = "".join(json.dumps({"text": f"row {i} say:{_say(i)}"}) + "\n" for i in range(5))
    run_dir = tmp_path / "stream"
    args = ["batch", "-", "--run-dir", str(run_dir), *BASE]
    result = runner.invoke(app, args, input=rows)
    assert result.exit_code == 0, result.output
    got = _lines(result.stdout)
    assert sorted(r["id"] for r in got) == [f"stdin:{i}" for i in range(1, 6)]
    assert {r["id"]: r["predicted"] for r in got}["stdin:1"] == "REFUTED"

    again = runner.invoke(app, args, input=rows)  # the same stream: nothing checked twice
    assert again.exit_code == 0, again.output
    assert sorted(r["id"] for r in _lines(again.stdout)) == [f"stdin:{i}" for i in range(1, 6)]
    assert len(llm.calls) == 5


def test_posts_with_replies_from_a_csv(tmp_path, llm):
    src = tmp_path / "posts.csv"
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["pid", "body", "user", "thread"])
        w.writerow(
            ["p1", "a post say:SUPPORTED", "ann", json.dumps(["agreed", {"text": "no way"}])]
        )
        w.writerow(["p2", "another say:REFUTED", "bob", ""])
    out = tmp_path / "posts.jsonl"
    cols = ["--kind", "post", "--text", "body", "--id", "pid", "--speaker", "user"]
    result = runner.invoke(
        app, ["batch", str(src), "-o", str(out), *BASE, *cols, "--replies", "thread"]
    )
    assert result.exit_code == 0, result.output
    assert [r["predicted"] for r in _lines(out.read_text())] == ["SUPPORTED", "REFUTED"]
    prompts = ["\n".join(m.content for m in c.messages) for c in llm.calls]
    assert any("agreed" in p and "no way" in p for p in prompts)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"claim_id": "a", "claim": "x"}\n{"claim_id": "a", "claim": "y"}\n', "appears twice"),
        ('{"claim_id": "a", "claim": "x"}\n{"claim_id": "b"}\n', "line 2: no column 'claim'"),
        ('{"claim_id": "a", "claim": 3}\n', "not text"),
        ('{"claim_id": "a", "claim": "x"}\nnot json\n', "line 2: not valid JSON"),
    ],
)
def test_bad_input_stops_before_any_check_naming_the_line(tmp_path, llm, content, message):
    src = tmp_path / "bad.jsonl"
    src.write_text(content)
    result = runner.invoke(
        app, ["batch", str(src), "-o", str(tmp_path / "o.jsonl"), *BASE, *COLUMNS]
    )
    assert result.exit_code == 2 and message in result.output
    assert llm.calls == []


def test_bad_options_are_clear_errors(tmp_path, llm):
    src = tmp_path / "c.jsonl"
    _jsonl(src, 2)
    no_out = runner.invoke(app, ["batch", str(src), *BASE])
    assert no_out.exit_code == 2 and "--out" in no_out.output
    kind = runner.invoke(
        app, ["batch", str(src), "-o", str(tmp_path / "x.jsonl"), "--kind", "tweet", *BASE]
    )
    assert kind.exit_code == 2 and "kind" in kind.output
    s2mad = ["batch", str(src), "-o", str(tmp_path / "x.jsonl"), "--method", "s2mad", *COLUMNS]
    wrong = runner.invoke(app, [*s2mad, "--no-progress"])
    assert wrong.exit_code == 2 and "checks post" in wrong.output
    first = runner.invoke(
        app, ["batch", str(src), "-o", str(tmp_path / "r.jsonl"), *BASE, *COLUMNS]
    )
    assert first.exit_code == 0, first.output
    other = ["batch", str(src), "-o", str(tmp_path / "r.jsonl"), "--method", "cot", *COLUMNS]
    changed = runner.invoke(app, [*other, "--no-progress"])
    assert changed.exit_code == 2 and "different method" in changed.output
    assert "--run-dir" in changed.output and "veracity eval" not in changed.output
    missing = runner.invoke(
        app, ["batch", str(tmp_path / "nope.csv"), "-o", str(tmp_path / "x.jsonl"), *BASE]
    )
    assert missing.exit_code == 2 and "not found" in " ".join(missing.output.split())


def test_engine_options():
    assert engine_for("local", None, None, None) is None
    with pytest.raises(ConfigError, match="--workers go with --engine ray"):
        engine_for("local", None, 3, None)
    with pytest.raises(ConfigError, match="use local or ray"):
        engine_for("dask", None, None, None)


def test_ray_options_reach_the_engine_without_starting_anything():
    from veracity.evaluation.ray_engine import RayEngine

    engine = engine_for("ray", "auto", 3, 5)
    assert isinstance(engine, RayEngine)
    assert (engine.options.address, engine.options.workers, engine.options.llm_limit) == (
        "auto",
        3,
        5,
    )
    with pytest.raises(ConfigError, match="workers"):
        engine_for("ray", None, 0, None)


async def test_records_are_reported_only_once_on_disk_and_a_failed_write_stops_the_run(
    tmp_path,
):
    from veracity.evaluation.store import PredictionRecord
    from veracity.evaluation.writer import RecordWriter

    class FailingStore(RunStore):
        def append_many(self, records):
            if self.predictions_path.is_file():
                raise OSError("disk full")
            super().append_many(records)

    store = FailingStore(tmp_path / "run")
    seen: list[str] = []

    def saved(record) -> None:
        assert record.id in {r.id for r in store.read_predictions()}  # already on disk
        seen.append(record.id)

    def rec(i: int) -> PredictionRecord:
        return PredictionRecord(id=f"r{i}", predicted="SUPPORTED", status="ok")

    async def work(sink) -> None:
        for i in range(3):
            sink(rec(i))  # three records gather while the first group is written
            await asyncio.sleep(0)
        await asyncio.sleep(0.2)
        sink(rec(3))  # the second group's write failed: the run stops here

    with pytest.raises(OSError, match="disk full"):
        await RecordWriter(store, saved).run(work)
    assert seen == [r.id for r in store.read_predictions()] and seen[0] == "r0"


def test_a_run_directory_in_use_is_refused(tmp_path, llm):
    src = tmp_path / "c.jsonl"
    _jsonl(src, 2)
    holder = RunStore(tmp_path / "o.run")  # another session holds the directory
    holder.acquire()
    try:
        args = ["batch", str(src), "-o", str(tmp_path / "o.jsonl"), *BASE, *COLUMNS]
        result = runner.invoke(app, args)
    finally:
        holder.release()
    assert result.exit_code == 2 and "in use" in " ".join(result.output.split())
    assert llm.calls == []
