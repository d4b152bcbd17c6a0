"""RADAR threshold calibration: the pure grid search, replay fidelity, and the CLI round trip."""

from __future__ import annotations

import itertools
import json

import pytest
import yaml
from typer.testing import CliRunner

from veracity.cli import app
from veracity.cli.methods import radar as calibrate_cli
from veracity.core import registry
from veracity.core.config import load_run_config
from veracity.core.types import Claim, Document
from veracity.datasets.base import DatasetInfo, Example
from veracity.evaluation.experiment import load_experiment
from veracity.llm.client import ManagedLLM
from veracity.methods.base import load_method
from veracity.methods.radar import RadarMethod
from veracity.methods.radar.calibration import (
    CalibrationError,
    RoundSignal,
    SignalRecord,
    evaluate,
    grid,
    grid_search,
    macro_f1,
    record_from_verdict,
    sensitivity,
)
from veracity.testing.radar import ScriptedRound, radar_script

LABELS = ("TRUE", "HALF-TRUE", "FALSE")


def rec(id_, gold, rounds):
    """rounds: (stop_margin, confidence, label); every round costs 60 debate tokens, 20 for
    the stop agent (none after the last round) and 20 for the judge."""
    last = len(rounds)
    return SignalRecord(
        id=id_,
        gold=gold,
        rounds=[
            RoundSignal(
                round=i,
                stop_margin=s,
                confidence=c,
                label=lab,
                debate_tokens=60,
                stop_tokens=0 if i == last else 20,
                judge_tokens=20,
            )
            for i, (s, c, lab) in enumerate(rounds, 1)
        ],
        final_judge_tokens=20,
    )


A = rec("a", "FALSE", [(0.6, 0.9, "FALSE"), (0.6, 0.9, "TRUE"), (None, 0.9, "TRUE")])
B = rec("b", "HALF-TRUE", [(-0.4, 0.95, "TRUE"), (-0.4, 0.95, "TRUE"), (None, 0.6, "HALF-TRUE")])
C = rec("c", "TRUE", [(0.9, 0.99, "TRUE"), (0.9, 0.99, "TRUE"), (None, 0.99, "TRUE")])


def test_replay_stops_at_the_first_round_meeting_both_thresholds():
    assert A.outcome(0.5, 0.9)[0].round == 1
    assert A.outcome(0.7, 0.0)[0].round == 3  # margin too low
    assert A.outcome(0.0, 0.95)[0].round == 3  # confidence too low
    assert B.outcome(-1.0, 0.0)[0].label == "TRUE"
    # the last round's missing stop margin never stops anything early
    assert rec("x", "TRUE", [(None, 1.0, "TRUE")]).outcome(-1.0, 0.0)[0].round == 1


def test_replayed_tokens_count_the_judge_only_where_it_is_asked():
    assert A.outcome(0.5, 0.9) == (A.rounds[0], 100)  # debate + stop + judge
    assert B.outcome(0.0, 0.0)[1] == 80 + 80 + 80  # judge never asked before the last round
    assert B.outcome(0.0, 0.0, lazy=False)[1] == 100 + 100 + 80
    assert A.outcome(0.0, 0.95)[1] == 100 + 100 + 80  # asked, but not confident enough
    assert A.fixed_tokens == 3 * 60 + 20  # no stopping checks, one final judge


def test_grid_search_finds_the_thresholds_that_stop_only_the_settled_claims():
    result = grid_search([A, B, C], LABELS)
    best = result.best
    assert best.macro_f1 == pytest.approx(1.0) and best.accuracy == pytest.approx(1.0)
    assert -0.4 < best.tau_s <= 0.6 and best.tau_v <= 0.9
    assert best.stopped_at == {1: 2, 3: 1}
    assert best.mean_tokens == pytest.approx((100 + 240 + 100) / 3)
    # every round: A ends on TRUE (wrong); no stopping checks are paid for
    assert result.fixed.accuracy == pytest.approx(2 / 3)
    assert result.fixed.mean_tokens == pytest.approx(200)
    assert result.tokens_saved == pytest.approx(1 - (440 / 3) / 200)
    assert result.n == 3 and result.grid_size == 41 * 21


def test_ties_on_macro_f1_go_to_fewer_tokens_not_to_grid_order():
    # (-1, 0.9) comes first in grid order and is right after 3 rounds (280 tokens);
    # (0.5, 0.1) is equally right after 2 rounds (180), so it wins; (-1, 0.1) stops
    # after round 1 on the wrong label.
    e = rec("e", "TRUE", [(-0.5, 0.5, "FALSE"), (0.8, 0.5, "TRUE"), (None, 0.9, "TRUE")])
    result = grid_search([e], LABELS, tau_s_values=[0.5, -1.0], tau_v_values=[0.9, 0.1])
    assert (result.best.tau_s, result.best.tau_v) == (0.5, 0.1)
    assert result.best.mean_tokens == 180 and result.grid_size == 4
    assert evaluate([e], -1.0, 0.9, LABELS).mean_tokens == 280
    assert evaluate([e], -1.0, 0.1, LABELS).macro_f1 == 0.0


def test_accuracy_is_the_default_objective_and_macro_f1_an_option():
    # stopping after round 1 says TRUE for all four (accuracy 0.75, one class only);
    # running on finds the FALSE claim but misjudges two TRUE ones (accuracy 0.5,
    # higher macro-F1)
    early_late = {"a": ("TRUE", "TRUE"), "b": ("TRUE", "FALSE"), "c": ("TRUE", "FALSE")}
    records = [
        rec(k, "TRUE", [(0.9, 0.9, early), (None, 0.9, late)])
        for k, (early, late) in early_late.items()
    ] + [rec("d", "FALSE", [(0.9, 0.9, "TRUE"), (None, 0.9, "FALSE")])]
    grid_args = {"tau_s_values": [0.5, 1.0], "tau_v_values": [0.5]}
    acc = grid_search(records, LABELS, **grid_args)
    f1 = grid_search(records, LABELS, **grid_args, objective="macro_f1")
    assert acc.objective == "accuracy" and f1.objective == "macro_f1"
    assert acc.best.tau_s == 0.5 and acc.best.accuracy == pytest.approx(0.75)
    assert f1.best.tau_s == 1.0 and f1.best.macro_f1 > acc.best.macro_f1
    # every grid point is kept; the matrix and one-threshold slices read from them
    assert len(acc.points) == 2
    rows, cols, values = acc.matrix("accuracy")
    assert rows == [0.5, 1.0] and cols == [0.5] and values == [[0.75], [0.5]]
    assert [p.tau_s for p in sensitivity(acc, "tau_s", [0.5, 0.7, 1.0])] == [0.5, 1.0]


def test_macro_f1_and_grid_helpers():
    assert macro_f1(["TRUE", "FALSE"], ["TRUE", "TRUE"], LABELS) == pytest.approx((2 / 3 + 0) / 2)
    assert grid(-1, 1, 0.5) == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert len(grid(0, 1, 0.05)) == 21
    with pytest.raises(ValueError):
        grid(0, 1, 0)
    with pytest.raises(CalibrationError):
        grid_search([], LABELS)
    backwards = A.model_dump()
    backwards["rounds"].reverse()
    with pytest.raises(ValueError, match="in order"):
        SignalRecord.model_validate(backwards)


def test_record_from_a_verdict_without_signals_is_an_error():
    with pytest.raises(CalibrationError, match="no label"):
        record_from_verdict("x", "TRUE", {"label": None})
    with pytest.raises(CalibrationError, match="record_signals"):
        record_from_verdict("x", "TRUE", {"label": "TRUE", "metadata": {}})


# --------------------------------------------------------------------------- replay fidelity

PLANS = {
    "alpha": [
        ScriptedRound("FALSE", 0.9, 0.8),
        ScriptedRound("TRUE", 0.6, 0.3),
        ScriptedRound("TRUE", 0.7, 0),
    ],
    "beta": [
        ScriptedRound("TRUE", 0.95, 0.1),
        ScriptedRound("TRUE", 0.9, 0.2),
        ScriptedRound("HALF-TRUE", 0.6, 0),
    ],
    "gamma": [
        ScriptedRound("TRUE", 0.5, 0.9),
        ScriptedRound("TRUE", 0.99, 0.9),
        ScriptedRound("TRUE", 0.99, 0),
    ],
}
GOLD = {"alpha": "FALSE", "beta": "HALF-TRUE", "gamma": "TRUE"}


def claim(marker: str) -> Claim:
    return Claim(
        id=marker,
        text=f"Claim {marker}: the budget grew",
        evidence=[Document(id=f"{marker}-g", text=f"Evidence about claim {marker}.")],
    )


async def test_replayed_thresholds_match_a_real_early_stopping_run_token_for_token():
    cfg = {"evidence": "given"}
    records = []
    for marker, gold in GOLD.items():
        recording = RadarMethod(
            radar_script(PLANS), {**cfg, "early_stop": False, "record_signals": True}
        )
        verdict = await recording.check(claim(marker))
        records.append(record_from_verdict(marker, gold, verdict.model_dump(mode="json")))
    pairs = [(-0.15, 0.7), (0.5, 0.95), (0.25, 0.0), (1.0, 0.0), (-1.0, 0.0)]
    for (tau_s, tau_v), lazy in itertools.product(pairs, (True, False)):
        for r in records:
            expected, tokens = r.outcome(tau_s, tau_v, lazy=lazy)
            thresholds = {"tau_s": tau_s, "tau_v": tau_v, "lazy_judge": lazy}
            live = await RadarMethod(radar_script(PLANS), {**cfg, **thresholds}).check(claim(r.id))
            assert live.metadata["rounds_run"] == expected.round, (r.id, tau_s, tau_v)
            assert live.label == expected.label
            assert live.usage.total_tokens == tokens
    for r in records:  # the fixed-rounds reference is what early_stop: false really costs
        method = RadarMethod(radar_script(PLANS), {**cfg, "early_stop": False})
        fixed = await method.check(claim(r.id))
        assert fixed.usage.total_tokens == r.fixed_tokens
        assert fixed.label == r.rounds[-1].label


# --------------------------------------------------------------------------- CLI round trip


class FixtureSet:
    """Three development claims with gold evidence (in Example.evidence, as loaders give it)."""

    info = DatasetInfo(
        name="radar_calibration_fixture",
        label_space="true_half_false",
        splits=("dev",),
        input_kind="claim",
        folder="none",
    )

    def load(self, split=None, data_dir=None):
        out = []
        for marker, gold in GOLD.items():
            c = claim(marker)
            out.append(
                Example(
                    id=marker,
                    input=c.model_copy(update={"evidence": []}),
                    label=gold,
                    label_space="true_half_false",
                    evidence=c.evidence,
                )
            )
        return out

    def corpus(self, data_dir=None):
        raise NotImplementedError


FIXTURE = FixtureSet()
if FIXTURE.info.name not in registry.datasets:
    registry.datasets.register(FIXTURE.info.name, FIXTURE)


def test_cli_calibrates_writes_a_config_reuses_the_cache_and_the_config_loads(
    tmp_path, monkeypatch
):
    base = tmp_path / "base.yaml"
    base.write_text(
        yaml.safe_dump(
            {
                "method": "radar",
                "method_config": {"evidence": "given"},
                "llm": {
                    "backend": "openai",
                    "model": "scripted",
                    "base_url": "http://127.0.0.1:9/v1",
                },
                "data_dir": str(tmp_path),
            }
        )
    )
    built = []

    def fake_build(cfg, cache_path=None, progress=None, **_paths):
        built.append(cache_path)
        return radar_script(PLANS)

    monkeypatch.setattr("veracity.llm.factory.build_llm", fake_build)
    out = tmp_path / "cal.yaml"
    args = ["calibrate", "radar", "--dataset", FIXTURE.info.name, "--split", "dev",
            "--out", str(out), "--config", str(base)]  # fmt: skip
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert len(built) == 1 and "tokens saved" in first.output

    signals = (tmp_path / "cal.signals.jsonl").read_text().splitlines()
    assert json.loads(signals[0])["header"]["dataset"] == FIXTURE.info.name
    assert len(signals) == 4 and (tmp_path / "cal.run" / "predictions.jsonl").is_file()

    # a second run only redoes the grid search: no model is built
    monkeypatch.setattr(
        "veracity.llm.factory.build_llm", lambda *a, **k: pytest.fail("inference re-ran")
    )
    second = CliRunner().invoke(app, [*args, "--step-s", "0.1"])
    assert second.exit_code == 0, second.output and "cached records" in second.output
    # the paper's sensitivity tables, and the full grid as CSV and heat map
    assert "sensitivity (τ_v held at" in second.output and "sensitivity (τ_s held" in second.output
    grid_rows = (tmp_path / "cal.grid.csv").read_text().splitlines()
    assert grid_rows[0].startswith("tau_s,tau_v,accuracy") and len(grid_rows) == 1 + 21 * 21
    assert (tmp_path / "cal.grid.png").read_bytes()[:4] == b"\x89PNG"
    assert "chosen for accuracy" in out.read_text()

    text = out.read_text()
    assert text.startswith("# RADAR stopping thresholds")
    run_cfg = load_run_config(out)
    mc = run_cfg.method_config
    assert run_cfg.method == "radar" and mc["early_stop"] is True and "record_signals" not in mc
    records = calibrate_cli.read_signals(tmp_path / "cal.signals.jsonl")[1]
    best = grid_search(records, LABELS, tau_s_values=grid(-1, 1, 0.1)).best
    assert (mc["tau_s"], mc["tau_v"]) == (best.tau_s, best.tau_v)
    assert best.macro_f1 == pytest.approx(1.0)

    assert load_experiment(out).method_config == mc  # what `veracity eval --config` reads
    method = load_method(run_cfg.method, llm=radar_script(PLANS), config=mc)
    assert (method.config.tau_s, method.config.tau_v) == (best.tau_s, best.tau_v)

    # `veracity check --config FILE` runs with the calibrated thresholds
    import veracity.llm.factory as factory

    # the factory's contract: a managed model (cache, retries, accounting around the backend)
    monkeypatch.setattr(factory, "build_llm", lambda *a, **k: ManagedLLM(radar_script(PLANS)))
    item = tmp_path / "claim.json"
    item.write_text(claim("alpha").model_dump_json())
    checked = CliRunner().invoke(
        app, ["check", "--config", str(out), "--file", str(item), "--json"]
    )
    assert checked.exit_code == 0, checked.output
    verdict = json.loads(checked.stdout)
    assert verdict["metadata"]["thresholds"] == {"tau_s": best.tau_s, "tau_v": best.tau_v}
    assert verdict["label"] == "FALSE" and verdict["metadata"]["rounds_run"] == 1


def test_cli_refuses_a_cache_made_for_another_dataset(tmp_path):
    out = tmp_path / "cal.yaml"
    calibrate_cli.write_signals(
        calibrate_cli.signals_path(out), {"dataset": "other", "split": "dev", "model": "m"}, [A]
    )
    result = CliRunner().invoke(
        app, ["calibrate", "radar", "--dataset", FIXTURE.info.name, "--out", str(out)]
    )
    assert result.exit_code == 2 and "--rerun" in result.output


def test_cli_refuses_a_base_config_for_another_method(tmp_path):
    base = tmp_path / "base.yaml"
    for method in ("direct", "s2mad"):  # naming the default method is no exception
        base.write_text(f"method: {method}\n")
        result = CliRunner().invoke(
            app, ["calibrate", "radar", "--dataset", FIXTURE.info.name, "--config", str(base)]
        )
        assert result.exit_code == 2 and "calibration is for radar" in result.output
