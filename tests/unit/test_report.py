"""`veracity report`: Markdown and self-contained HTML rendering of a run."""

from __future__ import annotations

import asyncio
import base64
import re

import pytest
from _eval_fixtures import config, scripted_llm

from veracity.evaluation.experiment import ExperimentConfig
from veracity.evaluation.report import load_run, metric_value, write_report
from veracity.evaluation.runner import prepare_run, run_session
from veracity.evaluation.store import RunStoreError

PAPER = {
    "paper": "Toy",
    "table": "Table 9",
    "caption": "Made-up numbers for a rendering test.",
    "dataset": "ToySet",
    "scale": "percent",
    "rows": [
        {"method": "Direct", "model": "m1", "metrics": {"accuracy": 70.0, "macro_f1": 65.5}},
        {
            "method": "Ours",
            "model": "m2",
            "ours": True,
            "metrics": {"accuracy": 80.0, "f1:SUPPORTED": 81.0},
        },
        {"method": "Elsewhere", "variant": "other", "metrics": {"accuracy": 1.0}},
    ],
}


def _finished_run(tmp_path, **kw):
    cfg = config(tmp_path, name="toy_table9", paper=PAPER, variants={"other": {}}, **kw)
    run = prepare_run(cfg, tmp_path / "run", llm=scripted_llm())
    asyncio.run(run_session(run))
    return run.store.path


def test_report_files_are_written_and_html_is_self_contained(tmp_path):
    run_dir = _finished_run(tmp_path)
    md, html = write_report(run_dir)
    text, page = md.read_text(), html.read_text()
    # Markdown: headline numbers, per-class table, confusion matrix and linked figures
    assert "| accuracy | 0.750 |" in text
    assert "| SUPPORTED | 0.750 | 0.750 | 0.750 | 4 | 4 |" in text
    assert "| SUPPORTED | 3 | 1 |" in text
    assert "![confusion matrix](report_files/confusion.png)" in text
    assert "![reliability diagram](report_files/reliability.png)" in text
    for name in ("confusion", "reliability"):
        assert (run_dir / "report_files" / f"{name}.png").read_bytes().startswith(b"\x89PNG")
    # HTML: figures inlined as PNG data URIs, nothing fetched from elsewhere
    uris = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(uris) == 2
    assert all(base64.b64decode(u).startswith(b"\x89PNG") for u in uris)
    assert not re.search(r'src="(?!data:)', page)
    assert not re.search(r'href="(?!#ex-\d+"|#examples"|https?://)', page)  # in-page links
    assert "<td>0.750</td>" in page


def test_paper_rows_are_shown_beside_ours_on_the_paper_scale(tmp_path):
    md, html = write_report(_finished_run(tmp_path))
    text = md.read_text()
    assert "## Paper comparison: Toy, Table 9" in text
    # metric columns are the union over this variant's rows, in order of appearance
    assert "| method | model | setting | accuracy | macro_f1 | f1:SUPPORTED |" in text
    assert "| **ours: direct** | embedded: smollm2-135m | this run | 75.0 | 75.0 | 75.0 |" in text
    assert "| Direct | m1 |  | 70.0 | 65.5 | – |" in text
    assert "| Ours (reproduced) | m2 |  | 80.0 | – | 81.0 |" in text
    assert "Ours (m2): accuracy -5.0, f1:SUPPORTED -6.0" in text  # ours minus reproduced
    assert "Elsewhere" not in text  # rows of another variant are left out
    assert 'class="reproduced"' in html.read_text()


def test_a_run_without_paper_rows_says_so_instead_of_an_empty_table(tmp_path):
    # Only another variant has figures (as toe_table2's base variant): the comparison
    # section says which variants do, and no table with a header but no metric columns
    only_other = {**PAPER, "rows": [PAPER["rows"][2]]}
    cfg = config(tmp_path, name="toy_table9", paper=only_other, variants={"other": {}})
    run = prepare_run(cfg, tmp_path / "run", llm=scripted_llm())
    asyncio.run(run_session(run))
    md, html = write_report(run.store.path)
    text = md.read_text()
    assert "## Paper comparison: Toy, Table 9" in text
    assert "| method | model | setting |" not in text
    assert "no figures for this run (the base variant)" in text
    assert "Variants with paper figures: other." in text
    assert "<th>setting</th>" not in html.read_text()


def test_metric_value_names():
    from veracity.core.labels import get_label_space
    from veracity.evaluation.metrics import compute_metrics
    from veracity.evaluation.store import PredictionRecord

    space = get_label_space("true_false")
    rec = PredictionRecord(id="1", gold="true", gold_original="true", predicted="true", status="ok")
    m = compute_metrics([rec], space)
    assert metric_value(m, "accuracy", space) == 1.0
    assert metric_value(m, "f1:TRUE", space) == 1.0  # labels are matched like LabelSpace.find
    assert metric_value(m, "recall:false", space) == 0.0
    assert metric_value(m, "f1:nonsense", space) is None


def test_report_of_an_empty_or_missing_run_is_a_clear_error(tmp_path):
    with pytest.raises(RunStoreError, match="not a run directory"):
        load_run(tmp_path / "nothing")
    from veracity.evaluation.store import RunStore

    RunStore(tmp_path / "empty").write_record(
        ExperimentConfig(labels="true_false").model_dump(mode="json")
    )
    with pytest.raises(RunStoreError, match="no predictions"):
        write_report(tmp_path / "empty")


def test_action_heat_map_appears_when_verdicts_record_actions_by_category(tmp_path):
    from veracity.evaluation.report import action_shares
    from veracity.evaluation.store import RunStore

    run_dir = _finished_run(tmp_path)
    store = RunStore(run_dir)
    records = store.read_predictions()
    assert not action_shares(load_run(run_dir))  # plain verdicts: no heat map
    plan = [("political", {"factcheck": 3, "web": 1}), ("scientific", {"arxiv": 2}),
            ("political", {"factcheck": 1, "wiki": 3})]  # fmt: skip
    for rec, (category, actions) in zip(records, plan, strict=False):
        rec.verdict.metadata.update(category=category, actions=actions)
    store.rewrite_predictions(records)
    shares = action_shares(load_run(run_dir))
    assert shares == {
        "political": {"factcheck": 0.5, "web": 0.125, "wiki": 0.375},
        "scientific": {"arxiv": 1.0},
    }
    md, html = write_report(run_dir)
    text = md.read_text()
    assert "## Retrieval actions by claim category" in text
    assert "| political | 0.0 | 50.0 | 12.5 | 37.5 |" in text
    assert (run_dir / "report_files" / "actions.png").read_bytes()[:4] == b"\x89PNG"
    assert "action heat map" in html.read_text()
