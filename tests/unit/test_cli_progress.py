"""Progress a person can read: the line built from a check's trace events (stage, round
or step with its limit, calls, searches, elapsed time, ETA), plain lines now and then
when standard error is not a terminal, every long command showing it, and layouts that
stay whole at 80 columns (progress lines, `compare`, `--help`)."""

from __future__ import annotations

import io
import json
import re
from types import SimpleNamespace

import pytest
from _eval_fixtures import scripted_llm
from rich.console import Console
from typer.testing import CliRunner

from veracity.cli import app
from veracity.cli.progress import JobProgress, Part, as_text, clock_text, fit, run_stats_parts
from veracity.cli.progress_view import ProgressView
from veracity.core.events import TraceEvent, parse_event
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.runtime.home import home_paths

runner = CliRunner()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def ev(kind: str, name: str, **data) -> TraceEvent:
    return parse_event({"kind": kind, "name": name, "t": 0.0, "data": data})


def call(tag: str, purpose: str | None = None, **data) -> TraceEvent:
    return ev("llm_call", tag, prompt_tokens=5, completion_tokens=5, cached=False,
              purpose=purpose, **data)  # fmt: skip


def debate_round(n: int, phase: str) -> TraceEvent:
    return ev("stage", "debate", step="round", round=n, phase=phase, rounds=3)


# A RADAR check as its trace records it (seconds since the start, event): evidence
# search, then three debate rounds of 20 s each with the stop agent after each.
RADAR = [
    (0, ev("stage", "radar", step="start", input_kind="claim")),
    (2, ev("search", "memory", cached=False)),
    (4, debate_round(1, "opening")),
    (10, call("politician:opening:1", "politician", round=1)),
    (16, call("scientist:opening:1", "scientist", round=1)),
    (20, call("stop:1", "stop", round=1)),
    (20, ev("stop_signal", "stopping", round=1, stop=False)),
    (24, debate_round(2, "rebuttal")),
    (30, call("politician:rebuttal:2", "politician", round=2)),
    (36, call("scientist:rebuttal:2", "scientist", round=2)),
    (40, call("stop:2", "stop", round=2)),
    (44, debate_round(3, "closing")),
    (50, call("politician:closing:3", "politician", round=3)),
    (56, call("scientist:closing:3", "scientist", round=3)),
    (62, call("round_judge:3", "round_judge", round=3)),
    (65, ev("stage", "radar", step="end", label="TRUE")),
]


def replay(job: JobProgress, clock: FakeClock, events, width: int = 80) -> dict[float, str]:
    lines = {}
    for t, event in events:
        clock.now = t
        job.trace.observe(event)
        lines[t] = job.lines(width)[0].plain
    return lines


def test_a_radar_check_reads_as_stage_round_calls_time_and_eta():
    clock = FakeClock()
    job = JobProgress("radar", single_check=True, clock=clock)
    lines = replay(job, clock, RADAR)
    assert lines[2] == "radar · starting · searching memory · 0 calls · 1 search · 0:02"
    assert lines[4] == "radar · debate round 1/3 (opening) · 0 calls · 1 search · 0:04"
    assert lines[16] == "radar · debate round 1/3 (opening) · scientist · 2 calls · 1 search · 0:16"
    # round 1 took 20 s: rounds 2 and 3 are about 40 s more
    assert (
        lines[24] == "radar · debate round 2/3 (rebuttal) · 3 calls · 1 search · 0:24 · ETA ~0:40"
    )
    assert lines[65] == "radar · finished · 9 calls · 1 search · 1:05"
    assert all(len(line) <= 80 for line in lines.values())
    clock.now = 0
    again = JobProgress("radar", single_check=True, clock=clock)
    replay(again, clock, RADAR[:8])
    clock.now = 34  # ten seconds into round 2, no event since
    assert again.lines(80)[0].plain.endswith("0:34 · ETA ~0:30")
    # round 2 runs past round 1's 20 s: round 3 still counts in full (the overrun was
    # taken off it, and the estimate fell to a few seconds minutes before the end)
    clock.now = 54
    assert again.lines(80)[0].plain.endswith("0:54 · ETA ~0:20")


def test_the_least_important_parts_go_first_when_the_line_is_narrow():
    clock = FakeClock()
    job = JobProgress("radar", single_check=True, clock=clock)
    lines = replay(job, clock, RADAR[:6], width=60)
    # the caller's name (scientist) and the searches went; stage, calls and time stayed
    assert lines[16] == "radar · debate round 1/3 (opening) · 2 calls · 0:16"
    assert "…" not in lines[16]
    parts = [Part("title", 10), Part("a" * 30, 1), Part("b" * 30, 1), Part("count", 9)]
    assert [p.text for p in fit(parts, 50)] == ["title", "a" * 30, "count"]
    assert as_text([Part("x" * 100, 5)], 20).plain == "x" * 19 + "…"  # one part: cut


def test_react_steps_and_tree_iterations_show_their_limits():
    clock = FakeClock()
    job = JobProgress("react", single_check=True, clock=clock)
    steps = [
        (0, ev("stage", "react", step="start")),
        (5, ev("tool_call", "react", tool="search_wikipedia", step=1)),
        (5, ev("agent_turn", "react", step=1, steps=8, action="search_wikipedia")),
        (10, ev("agent_turn", "react", step=2, steps=8, action="search_wikipedia")),
    ]
    lines = replay(job, clock, steps)
    assert lines[5].startswith("react · step 2/8 · 0 calls")
    assert lines[10] == "react · step 3/8 · 0 calls · 0 searches · 0:10 · ETA ~0:30"

    clock.now = 0
    toe = JobProgress("toe", single_check=True, clock=clock)
    tree = [
        (0, ev("stage", "toe", step="start")),
        (1, ev("stage", "toe", step="setup", iterations=20)),
        (9, ev("tree_node", "toe", node_id="n0", iteration=1)),
        (9, ev("tree_node", "toe", node_id="n1", iteration=1)),
        (17, ev("tree_node", "toe", node_id="n0", iteration=2)),
    ]
    lines = replay(toe, clock, tree)
    assert lines[1].startswith("toe · setup · 0 calls")
    assert lines[9].startswith("toe · iteration 2/20 · 0 calls")
    assert lines[17] == "toe · iteration 3/20 · 0 calls · 0 searches · 0:17 · ETA ~2:24"  # 18 × 8 s


def test_stages_read_as_words():
    clock = FakeClock()
    job = JobProgress("zofia", single_check=True, clock=clock)
    stages = [
        (0, ev("stage", "zofia", step="start")),
        (9, ev("stage", "zofia:keywords", keywords=[])),  # emitted once the keywords are found
        (12, ev("search", "web", cached=False)),
        (30, ev("stage", "zofia:retrieval")),
        (41, call("expert:triage")),
        (50, ev("stage", "s2mad", step="stance_separation")),
    ]
    lines = replay(job, clock, stages)
    assert lines[9] == "zofia · keywords done · 0 calls · 0 searches · 0:09"
    assert lines[12] == "zofia · keywords done · searching web · 0 calls · 1 search · 0:12"
    assert lines[41] == "zofia · retrieval done · expert:triage · 1 call · 1 search · 0:41"
    assert lines[50].startswith("zofia · s2mad stance separation · ")


def test_failed_searches_are_counted_apart():
    clock = FakeClock()
    job = JobProgress("rag", single_check=True, clock=clock)
    failed = ev("error", "wiki", error="SourceUnreachable: timeout", search_failed=True)
    lines = replay(job, clock, [(0, ev("search", "web", cached=False)), (1, failed), (2, failed)])
    assert "1 search, 2 failed" in lines[2]


def _stats(done: int, correct: int, errors: int = 0) -> SimpleNamespace:
    status = {"ok": done - errors, "error": errors}
    return SimpleNamespace(accuracy=correct / done, tokens=1234 * done, cost_usd=0.0,
                           unpriced=0, by_status=status)  # fmt: skip


def test_an_eval_estimates_the_time_left_from_this_sessions_pace():
    clock = FakeClock()
    job = JobProgress("cot · scifact", total=10, clock=clock)
    job.advance(2, earlier=True)  # resumed: these do not make the pace
    assert job.lines(80)[0].plain == "cot · scifact · 2/10 · 20% · 0:00"
    for i in range(1, 5):
        clock.now = 10 * i
        job.item_done(stats=run_stats_parts(_stats(2 + i, 2 + i, errors=1)))
    # tokens are the first to go at 80 columns; the error count outlasts them and the cost
    assert job.lines(80)[0].plain == (
        "cot · scifact · 6/10 · 60% · 0:40 · ETA 0:40 · acc 1.000 · $0.0000 · 1 error"
    )
    assert job.lines(50)[0].plain == "cot · scifact · 6/10 · 0:40 · ETA 0:40 · 1 error"
    assert "━" not in job.lines(80, bar=True)[0].plain  # no room for a bar
    bar = job.lines(100, bar=True)[0].plain
    assert len(bar) <= 100 and re.search("6/10 ━{6}─{4} · 60%", bar), bar  # 60% of 10 cells


def test_an_eval_shows_its_running_check_once_it_is_slow():
    clock = FakeClock()
    job = JobProgress("radar · liar", total=4, clock=clock, checks_after_s=5)
    for t, event in RADAR[:8]:
        clock.now = t
        job.trace.observe(event, key="check-1")
    clock.now = 24
    main, now = job.lines(80)
    assert main.plain == "radar · liar · 0/4 · 0% · 0:24 · 3 calls · 1 search"
    assert now.plain == "  now: debate round 2/3 (rebuttal) · 3 calls · 1 search · ETA ~0:40"


def test_without_a_terminal_plain_lines_come_at_stage_changes_and_periodically():
    clock = FakeClock()
    stream = io.StringIO()
    console = Console(file=stream, width=80)
    job = JobProgress("radar", single_check=True, clock=clock)
    # RADAR's events, a tick of the timer at 19 s, and a slow last call
    events = [*RADAR[:5], (19, None), *RADAR[5:-1], (100, call("late", "judge")), RADAR[-1]]
    with ProgressView(job, console, ticker=False, final="if_started") as view:
        assert not view.live
        for t, event in events:
            clock.now = t
            view.tick() if event is None else view.event(event)
        clock.now = 102
    printed = stream.getvalue().splitlines()
    assert printed == [
        "radar · debate round 1/3 (opening) · 0 calls · 1 search · 0:04",  # new stage
        "radar · debate round 1/3 (opening) · scientist · 2 calls · 1 search · 0:19",  # 15 s
        "radar · debate round 2/3 (rebuttal) · 3 calls · 1 search · 0:24 · ETA ~0:40",
        "radar · debate round 2/3 (rebuttal) · 6 calls · 1 search · 0:40 · ETA ~0:24",
        "radar · debate round 3/3 (closing) · 6 calls · 1 search · 0:44 · ETA ~0:20",
        "radar · debate round 3/3 (closing) · 9 calls · 1 search · 1:02 · ETA ~0:02",
        "radar · debate round 3/3 (closing) · judge · 10 calls · 1 search · 1:40",
        "radar · finished · 10 calls · 1 search · 1:42",  # the last state, at the end
    ]
    assert len(printed) < len(events) / 2


def test_a_quick_check_prints_no_progress_and_no_progress_prints_nothing():
    clock = FakeClock()
    stream = io.StringIO()
    console = Console(file=stream, width=80)
    job = JobProgress("direct", single_check=True, clock=clock)
    with ProgressView(job, console, ticker=False, final="if_started") as view:
        for event in (RADAR[0][1], call("direct"), RADAR[-1][1]):
            view.event(event)
            clock.now += 0.5
    off = ProgressView(JobProgress("x", total=3, clock=clock), console, enabled=False)
    with off:
        off.item_done()
    assert stream.getvalue() == ""


def test_the_end_of_a_check_is_printed_once():
    # the end event is a stage change (printed), then the view closes in the same second
    clock = FakeClock()
    stream = io.StringIO()
    job = JobProgress("direct", single_check=True, clock=clock)
    with ProgressView(job, Console(file=stream, width=80), ticker=False, final="if_started") as v:
        v.event(ev("stage", "direct", step="start", input_kind="claim"))
        clock.now = 3.2
        v.event(call("direct"))
        v.event(ev("stage", "direct", step="end", label="false"))
    assert stream.getvalue().splitlines() == ["direct · finished · 1 call · 0 searches · 0:03"]


def test_clock_text():
    assert [clock_text(s) for s in (0, 38.4, 725, 3723)] == ["0:00", "0:38", "12:05", "1:02:03"]


# --------------------------------------------------------------------------- commands


@pytest.fixture
def plain_lines(monkeypatch):
    """Plain progress lines at every stage change (and, with ``every``, every tick)."""

    def set_(every: float = 15.0) -> None:
        monkeypatch.setattr("veracity.cli.progress_view.PLAIN_STAGE_GAP_S", 0.0)
        monkeypatch.setattr("veracity.cli.progress_view.PLAIN_EVERY_S", every)

    return set_


@pytest.fixture
def llm(monkeypatch):
    model = scripted_llm()

    def build_llm(cfg, *, cache_path=None, progress=None, **_paths):
        return ManagedLLM(model, cache=ResponseCache(cache_path, mode=cfg.cache_mode))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    for command in ("eval", "batch"):
        monkeypatch.setattr(f"veracity.cli.{command}.ensure_model", lambda cfg: None)
    return model


def test_check_prints_its_rounds_to_a_log(monkeypatch, tmp_path, plain_lines):
    from veracity.evaluation.experiment import experiment_dir
    from veracity.testing.radar import ScriptedRound, radar_script

    plain_lines()
    llm = radar_script({"Kyiv": [ScriptedRound("FALSE", 0.6, 0.1)]})  # never stops early
    monkeypatch.setattr("veracity.llm.factory.build_llm", lambda cfg=None, **kw: ManagedLLM(llm))
    monkeypatch.setattr("veracity.cli.check.ensure_model", lambda cfg: None)
    claim = {"text": "Kyiv is the capital of Poland [bold]x[/bold].",
             "evidence": [{"id": "e1", "text": "Kyiv is the capital of Ukraine."}]}  # fmt: skip
    f = tmp_path / "claim.json"
    f.write_text(json.dumps(claim))
    config = str(experiment_dir() / "radar_table2.yaml")
    args = ["check", "--config", config, "--variant", "gold_evidence", "--file", str(f)]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["label"] == "FALSE"  # standard output: the verdict only
    log = result.stderr.splitlines()
    for n, phase in ((1, "opening"), (2, "rebuttal"), (3, "closing")):
        assert any(ln.startswith(f"radar · debate round {n}/3 ({phase})") for ln in log), log
    assert re.match(r"radar · finished · \d+ calls · 0 searches · \d+:\d\d$", log[-1]), log
    events = len(json.loads(result.stdout)["trace"]["events"])
    assert len(log) < events / 2  # lines at stage changes, not one per event


def test_eval_and_batch_print_count_pace_and_eta_to_a_log(tmp_path, llm, plain_lines):
    plain_lines(every=0.0)  # a line at every tick, to see the run's middle
    args = ["eval", "--data-dir", str(tmp_path), "--dataset", "toy_eval", "--concurrency",
            "1", "--out", str(tmp_path / "run")]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    log = result.stderr
    assert re.search(r"^direct · toy_eval · 3/8 · 37% · \d:\d\d · ETA \d:\d\d · 8 calls", log, re.M)
    assert re.search(r"^direct · toy_eval · 8/8 · 100% .*acc 0\.750 .*\$0\.0000$", log, re.M)

    src = tmp_path / "claims.jsonl"
    src.write_text("".join(json.dumps({"text": f"claim {i} say:REFUTED"}) + "\n" for i in range(5)))
    args = ["batch", str(src), "--out", str(tmp_path / "out.jsonl"), "--method", "direct",
            "--labels", "supported_refuted"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert re.search(r"^direct · 2/5 rows · 40% · \d:\d\d · ETA \d:\d\d", result.stderr, re.M)
    assert re.search(r"^direct · 5/5 rows · 100% · ", result.stderr, re.M)

    stream = ["batch", "-", "--method", "direct", "--labels", "supported_refuted", "--run-dir",
              str(tmp_path / "stream")]  # fmt: skip
    result = runner.invoke(app, stream, input=src.read_text())
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 5  # standard output: the results only
    assert all(ln.startswith("{") for ln in result.stdout.splitlines())
    pace = r"(?:[\d.,]+/s|[\d.]+ s each)"  # no total: a pace instead of an ETA
    assert re.search(rf"^direct · 5 rows · {pace} · ", result.stderr, re.M)


def test_train_toe_prints_claims_done_and_eta_to_a_log(tmp_path, monkeypatch, plain_lines):
    from _toe_script import FACTCHECK_DOCS, WIKI_DOCS, toe_llm
    from test_toe_training import PLAN, _liar_rows

    from veracity.retrieval.local.corpus import build_local_corpus

    plain_lines(every=0.0)
    data = tmp_path / "data"
    (data / "liar").mkdir(parents=True)
    (data / "liar" / "train.tsv").write_text(_liar_rows(6))
    build_local_corpus(
        "toyfc", FACTCHECK_DOCS + WIKI_DOCS, mode="bm25", indexes_dir=home_paths().indexes
    )
    model = toe_llm(PLAN)
    monkeypatch.setattr("veracity.llm.factory.build_llm", lambda cfg, **kw: ManagedLLM(model))
    monkeypatch.setattr("veracity.cli.methods.toe.ensure_model", lambda cfg: None)
    args = ["train", "toe", "--limit", "3", "--checkpoint", "ck", "--data-dir", str(data),
            "--source", "factcheck=local:toyfc", "--no-fit"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    log = result.stderr
    assert re.search(r"^toe · collecting trees · 1/3 claims · 33% · .*ETA \d:\d\d", log, re.M)
    assert re.search(
        r"^toe · collecting trees · 3/3 claims · 100% · \d:\d\d · \d+ calls", log, re.M
    )


def test_index_build_prints_its_stages_to_a_log(tmp_path, plain_lines):
    plain_lines(every=0.0)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(4):
        (docs / f"d{i}.txt").write_text(f"Document {i} about the moon landing.")
    result = runner.invoke(app, ["index", "build", str(docs), "--name", "t", "--mode", "hybrid",
                                 "--embedder", "hashing:64"])  # fmt: skip
    assert result.exit_code == 0, result.output
    log = result.stderr.splitlines()
    for line in (
        "index t (hybrid) · reading · 4 documents",
        "index t (hybrid) · chunking · 4/4",
        "index t (hybrid) · embedding · 4/4 chunks",
        "index t (hybrid) · writing · ",
    ):
        assert any(ln.startswith(line) for ln in log), (line, log)


# ------------------------------------------------------------------------ 80 columns


def test_compare_stays_whole_at_80_columns(tmp_path, llm):
    from veracity.cli.runs import comparison_tables
    from veracity.evaluation.compare import compare_runs

    runs = []
    for method in ("direct", "toy_special"):
        out = tmp_path / f"{method}-toy_eval-dev-a-rather-long-model-name-q4_k_m"
        args = ["eval", "--data-dir", str(tmp_path), "--dataset", "toy_eval", "--method",
                method, "--out", str(out), "--no-progress"]  # fmt: skip
        assert runner.invoke(app, args).exit_code == 0
        runs.append(out)
    result = compare_runs(runs, n_boot=50)
    narrow = Console(width=80, record=True, file=io.StringIO())
    for table in comparison_tables(result, 80):
        narrow.print(table)
    text = narrow.export_text()
    assert "…" not in text and all(len(line) <= 80 for line in text.splitlines())
    for header in ("acc", "F1", "tok/ex", "p50/p95 s", "wall s", "USD", "#2 − #1"):
        assert header in text
    names = [ln.split("│") for ln in text.splitlines() if ln.count("│") == 5]  # 4 columns
    cells = "".join(row[2].strip() for row in names)
    assert "direct-toy_eval-dev-a-rather-long-model-name-q4_k_m" in cells  # wrapped, whole
    wide = Console(width=220, record=True, file=io.StringIO())
    for table in comparison_tables(result, 220):
        wide.print(table)
    whole = wide.export_text()
    assert "accuracy" in whole and "macro-F1" in whole and "#1" not in whole
    cli = runner.invoke(app, ["compare", *map(str, runs), "--n-boot", "50"])
    assert cli.exit_code == 0 and "…" not in cli.output


def test_help_wraps_descriptions_instead_of_cutting_them():
    for args in (["--help"], ["index", "--help"], ["advfact", "--help"]):
        result = runner.invoke(app, args, terminal_width=80)
        assert result.exit_code == 0, result.output
        commands = result.output.split("Commands:")[1]
        assert "..." not in commands and "…" not in commands
        assert all(len(line) <= 80 for line in result.output.splitlines())
    top = runner.invoke(app, ["--help"], terminal_width=80).output
    assert "writes a run\n" in top and "directory." in top  # wrapped, whole
    assert "result per row; resumable through its run directory" in top


def test_on_a_terminal_the_line_is_live_with_a_bar_and_fits_80_columns():
    clock = FakeClock()
    console = Console(file=io.StringIO(), width=80, force_terminal=True, record=True)
    job = JobProgress("cot · scifact", total=50, unit="claims", clock=clock)
    with ProgressView(job, console) as view:
        assert view.live
        for i in range(1, 11):
            clock.now = 12.0 * i
            view.item_done()
    shown = [ln for ln in console.export_text().splitlines() if ln.strip()]
    assert re.fullmatch(r"\S cot · scifact · 10/50 claims ━+─+ · 20% · 2:00 · ETA 8:00", shown[-1])
    assert len(shown[-1]) <= 80


def test_a_document_check_reads_as_claims_checked_with_an_eta():
    clock = FakeClock()
    job = JobProgress("rag", single_check=True, clock=clock)
    claims = [
        {"id": f"c{i}", "text": f"claim {i}", "spans": [[0, 1]], "category": category}
        for i, category in enumerate(["factual", "factual", "opinion", "factual"], 1)
    ]
    done = [
        ("checked", "c1"),
        ("not_checkworthy", "c3"),
    ]
    events = [
        (3, call("claims:decompose", "claims:decompose")),
        (6, ev("claims_found", "document", count=4, claims=claims, sentences=3)),
        (7, ev("stage", "rag", step="start")),  # a claim's own stages name nothing here
        *[
            (16, ev("claim_checked", "document", claim_id=cid, status=status))
            for status, cid in done
        ],
        (17, ev("stage", "rag", step="end", label="false")),
    ]
    lines = replay(job, clock, events)
    assert lines[3].startswith("rag · starting · claims:decompose · 1 call")
    assert lines[6].startswith("rag · claims 0/3 checked · 1 call")
    # one of three check-worthy claims took 10 s since they were found: 20 s more
    assert lines[16] == "rag · claims 1/3 checked · 1 call · 0 searches · 0:16 · ETA ~0:20"
    assert lines[17].startswith("rag · claims 1/3 checked")  # a claim's end is not the end


def test_a_document_s_claim_checks_show_as_the_document_s_progress():
    from veracity.core import context

    clock = FakeClock()
    stream = io.StringIO()
    job = JobProgress("rag", single_check=True, clock=clock)
    claims = [{"id": "c1", "text": "x", "spans": [[0, 1]], "category": "factual"}]
    console = Console(file=stream, width=80)
    with ProgressView(job, console, ticker=False) as view, context.check_context() as document:
        clock.now = 2
        view.event(ev("claims_found", "document", count=1, claims=claims))
        with context.check_context() as claim:  # the claim's own check, inside
            assert claim.outer is document and claim.root() is document
            clock.now = 5
            view.event(call("rag:answer", "answer"))
            view.event(ev("stage", "rag", step="end", label="false"))
        clock.now = 8
        view.event(ev("claim_checked", "document", claim_id="c1", status="checked"))
    assert document.outer is None
    line = job.lines(80)[0].plain
    assert line == "rag · claims 1/1 checked · answer · 1 call · 0 searches · 0:08"
