"""The document task of `veracity eval` (issue 26): whole answers, their claims found,
checked and scored against the annotated claims, through the command line, resumable.

The scripted model decomposes each sentence of the FacTool-QA fixture into claims chosen
here, sorts them by check-worthiness and answers the `direct` claim method by keyword,
so every figure below is computed by hand from those choices (see `_expected`).
"""

from __future__ import annotations

import asyncio
import json
import pickle
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.config import RunConfig
from veracity.core.errors import EvalError
from veracity.core.labels import get_label_space
from veracity.evaluation.document_metrics import (
    document_metrics,
    greedy_match,
    label_scores,
    response_label,
)
from veracity.evaluation.document_task import ClaimMatcher, task_config, truth_of
from veracity.evaluation.engines import check_job
from veracity.evaluation.runner import execute, prepare_run
from veracity.evaluation.store import RunStore
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.testing import ScriptedLLM

DATA = Path(__file__).resolve().parents[1] / "data" / "datasets"
runner = CliRunner()

# sentence -> the atomic claims the scripted model finds in it (others: none)
CLAIMS = {
    "The United States has the highest number of nuclear power plants in the world, with 94 "
    "operating reactors.": [
        "The United States has the highest number of nuclear power plants in the world",
        "The United States has 94 operating reactors",
    ],
    "Other countries with a significant number of nuclear power plants include France, China, "
    "Russia, and South Korea.": [
        "France has a significant number of nuclear power plants",
        "Nuclear power is popular",
    ],
    "The CEO of Twitter at the time of writing this answer is Jack Dorsey.": [
        "Jack Dorsey is the CEO of Twitter"
    ],
    "Dorsey is also the CEO and co-founder of Square, a financial services and mobile payment "
    "company.": ["Square is a financial services company"],
    # FactCheck-Bench's fixture answer
    "In 1980, the oldest justice on the United States Supreme Court was Justice William O. "
    "Douglas.": [
        "In 1980, the oldest justice on the United States Supreme Court was Justice William O. "
        "Douglas."
    ],
    "He was born on October 16, 1898, and served on the Supreme Court from 1939 until his "
    "retirement in 1975.": ["Justice Douglas was born in 1898"],
}
OPINIONS = {"Nuclear power is popular"}
FALSE_WHEN = ("94 operating", "until 2008", "was Justice William O")  # the claim method says false
BROKEN_WHEN = "Wall Street Journal"  # the claim method's replies are never valid
BROKEN_EXTRACTION: tuple[str, ...] = ()  # a text naming one gets no valid categories


def _text(request) -> str:
    return "\n".join(m.content for m in request.messages)


def _fenced(request, tag: str) -> list[str]:
    return [" ".join(t.split()) for t in re.findall(rf"<{tag}[^>]*>\n(.*?)\n</{tag}>",
                                                    _text(request), re.S)]  # fmt: skip


def _sentence_claims(request) -> list[str]:
    return CLAIMS.get(_fenced(request, "sentence")[0], [])


def _label(request) -> str:
    claim = _fenced(request, "input")[0]
    if BROKEN_WHEN in claim:
        return "not json at all"
    return json.dumps({"label": "false" if any(w in claim for w in FALSE_WHEN) else "true"})


def _categories(request) -> str:
    if any(word in _text(request) for word in BROKEN_EXTRACTION):
        return "not json"
    claims = _fenced(request, "claim")
    return json.dumps({"claims": ["opinion" if c in OPINIONS else "factual" for c in claims]})


def scripted() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.on(".*", lambda r: json.dumps({"claims": _sentence_claims(r)}), tag="claims:decompose")
    llm.on(".*", lambda r: json.dumps({"claims": _sentence_claims(r)}),
           tag="claims:decontextualise")  # fmt: skip
    llm.on(".*", _categories, tag="claims:checkworthy")
    llm.on(".*", _label, tag="direct")
    return llm


@pytest.fixture
def llm(monkeypatch):
    model = scripted()

    def build_llm(cfg, *, cache_path=None, progress=None, **_paths):
        return ManagedLLM(model, cache=ResponseCache(cache_path, mode=cfg.cache_mode))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    return model


def _config(tmp_path: Path, **extra) -> Path:
    cfg = {
        "name": "documents_test", "method": "direct", "labels": "true_false",
        "dataset": "factool_qa_documents", "concurrency": 1,
        "document": {"match": "lexical", "lexical_threshold": 0.5,
                     "extraction": {"mode": "sentence"}}, **extra,  # scripted per sentence
    }  # fmt: skip
    path = tmp_path / "documents_test.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _eval(tmp_path: Path, out: Path, *args: str):
    base = ["eval", "--config", str(_config(tmp_path)), "--data-dir", str(DATA), "--no-progress"]
    return runner.invoke(app, [*base, "--out", str(out), *args])


def test_the_document_task_end_to_end_with_known_figures(tmp_path, llm):
    out = tmp_path / "run"
    result = _eval(tmp_path, out)
    assert result.exit_code == 0, result.output
    found = json.loads((out / "document_metrics.json").read_text())
    assert found["matcher"] == "lexical" and found["threshold"] == 0.5
    # 13 annotated claims; 6 extracted (4 + 2), of which 4 are annotated claims word for word
    assert found["extraction"] == {"annotated_claims": 13, "extracted_claims": 6, "matched": 4,
                                   "recall": 4 / 13, "precision": 4 / 6, "failed": 0}  # fmt: skip
    assert found["checkworthiness"]["available"] is False  # FacTool annotates none: n/a
    # given the annotated claims: answer 1 all right; answer 2: its first claim called true
    # (it is false), its last claim's check failed (an error: a miss, counted apart)
    gold = found["gold_claims"]
    assert (gold["n"], gold["checked"], gold["error"]) == (13, 12, 1)
    assert gold["accuracy"] == pytest.approx(11 / 13)
    assert gold["f1"] == pytest.approx({"true": 0.9, "false": 0.8})
    assert gold["macro_f1"] == pytest.approx(0.85)
    # given the extracted claims: the 4 matched and checked ones, gold T F T F, said T F T T;
    # the Square claim matched nothing and is counted apart; the opinion was not checked
    ext = found["extracted_claims"]
    assert (ext["n"], ext["checked"], ext["unmatched_checked"]) == (4, 5, {"true": 1})
    assert ext["f1"] == pytest.approx({"true": 0.8, "false": 2 / 3})
    # answers: 1 has a false claim (false, right); 2 has none found (true, wrong)
    assert found["response"]["accuracy"] == 0.5 and found["response"]["predicted_false"] == 1
    assert found["response_given_gold_claims"]["accuracy"] == 1.0
    cost = found["cost"]
    assert cost["claims_per_document_extracted"] == 3.0
    assert cost["claims_per_document_annotated"] == 6.5
    # model calls per answer: sentences decomposed, those with claims decontextualised, one
    # check-worthiness call, one per checked claim and per annotated claim (the broken
    # claim's three attempts count once each)
    calls = [len(llm.calls_tagged(t)) for t in ("claims:decompose", "claims:decontextualise",
                                                "claims:checkworthy", "direct")]  # fmt: skip
    assert calls[:3] == [6, 4, 2]
    assert cost["llm_calls_per_document"] == pytest.approx(sum(calls) / 2)
    assert cost["extraction_llm_calls_per_document"] == pytest.approx(sum(calls[:3]) / 2)
    assert cost["gold_check_llm_calls_per_document"] >= 13 / 2  # one or more per claim
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["accuracy"] == 0.5  # the answers, as the run's own metrics
    assert metrics["extra"]["gold_claims.macro_f1"] == pytest.approx(0.85)
    assert metrics["extra"]["extraction.recall"] == pytest.approx(4 / 13)
    assert "checkworthiness.f1_factual" not in metrics["extra"]


def test_the_run_resumes_without_calling_the_model_again(tmp_path, llm):
    out = tmp_path / "run"
    first = _eval(tmp_path, out, "--limit", "1")
    assert first.exit_code == 0, first.output
    before = len(llm.calls)
    assert len([json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]) == 1
    again = _eval(tmp_path, out)
    assert again.exit_code == 0, again.output
    assert "1 already done" in again.output
    assert len(llm.calls_tagged("claims:checkworthy")) == 2  # the second answer only
    assert len(llm.calls) > before
    records = (out / "predictions.jsonl").read_text().splitlines()
    assert [json.loads(r)["id"] for r in records] == ["knowledge_qa:1", "knowledge_qa:2"]
    assert json.loads((out / "document_metrics.json").read_text())["documents"] == 2


def test_report_sets_the_claim_figures_beside_the_paper_rows(tmp_path, llm):
    out = tmp_path / "run"
    paper = {"paper": "MERMAID", "table": "Table 1", "caption": "claims", "dataset": "FacTool-QA",
             "scale": "fraction", "rows": [{"method": "FIRE", "model": "GPT-4o", "ours": True,
             "metrics": {"gold_claims.macro_f1": 0.77}}]}  # fmt: skip
    config = _config(tmp_path, paper=paper)
    base = ["eval", "--config", str(config), "--data-dir", str(DATA), "--no-progress"]
    assert runner.invoke(app, [*base, "--out", str(out)]).exit_code == 0
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "report.md").read_text()
    assert "gold_claims.macro_f1" in text and "0.85" in text and "+0.08" in text


def test_compare_sets_two_runs_document_figures_side_by_side(tmp_path, llm):
    first, second = tmp_path / "first", tmp_path / "second"
    assert _eval(tmp_path, first).exit_code == 0
    assert _eval(tmp_path, second, "--limit", "1").exit_code == 0
    result = runner.invoke(app, ["compare", str(first), str(second), "--markdown"])
    assert result.exit_code == 0, result.output
    rows = {line.split(" | ")[0]: line for line in result.output.splitlines()}
    # all answers: 4 of 13 annotated claims found; the first answer alone: 3 of its 6
    assert rows["| claim extraction recall"] == "| claim extraction recall | 0.308 | 0.500 |"
    assert "| document figure | first | second |" in result.output
    tables = runner.invoke(app, ["compare", str(first), str(second)], env={"COLUMNS": "200"})
    assert tables.exit_code == 0, tables.output
    recall = next(ln for ln in tables.output.splitlines() if "claim extraction recall" in ln)
    assert "0.308" in recall and "0.500" in recall


def test_factcheck_bench_answers_have_checkworthiness(tmp_path, llm):
    out = tmp_path / "run"
    config = _config(tmp_path, dataset="factcheck_bench_documents")
    base = ["eval", "--config", str(config), "--data-dir", str(DATA), "--no-progress"]
    result = runner.invoke(app, [*base, "--out", str(out)])
    assert result.exit_code == 0, result.output
    found = json.loads((out / "document_metrics.json").read_text())
    # the one labelled answer: its first claim is the annotated one, its second is not
    assert found["documents"] == 1
    assert (found["extraction"]["recall"], found["extraction"]["precision"]) == (1.0, 0.5)
    worth = found["checkworthiness"]  # over the annotated claims, each classified again
    assert worth["available"] and worth["claims"] == 1 and worth["f1_factual"] == 1.0
    assert worth["matched_pairs"] == 1 and worth["matched_pairs_f1_factual"] == 1.0
    assert found["gold_claims"]["n"] == 1 and found["gold_claims"]["accuracy"] == 1.0
    assert found["response"]["accuracy"] == 1.0 and found["response"]["predicted_false"] == 1
    assert found["extracted_claims"]["unmatched_checked"] == {"true": 1}
    # the extraction reads the question the answer responds to
    prompt = llm.calls_tagged("claims:decompose")[0].messages[-1].content
    assert "The question the text answers:\n<question>" in prompt


def test_a_claim_method_that_checks_no_claims_is_refused(tmp_path, llm):
    config = _config(tmp_path, method="s2mad", labels=None)
    base = ["eval", "--config", str(config), "--data-dir", str(DATA), "--no-progress"]
    result = runner.invoke(app, [*base, "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "document task checks their claims" in result.output


def test_bad_document_settings_are_named():
    with pytest.raises(EvalError, match="lexical_threshold"):
        task_config({"lexical_threshold": 2})
    with pytest.raises(EvalError, match="colour"):
        task_config({"colour": "red"})
    assert task_config(None).embedding_threshold == 0.7


# ------------------------------------------------------------------ metrics, unit by unit


def test_greedy_match_takes_the_best_pairs_one_to_one_above_the_threshold():
    sim = [[0.9, 0.8, 0.1],
           [0.95, 0.7, 0.2],
           [0.1, 0.69, 0.3]]  # fmt: skip
    # (1,0) first at 0.95; row 0 then takes column 1 (0.8); row 2's best free is below 0.7
    assert greedy_match(sim, 0.7) == [(0, 1), (1, 0)]
    assert greedy_match(sim, 0.96) == []
    assert greedy_match([[]], 0.5) == [] and greedy_match([], 0.5) == []


def test_label_scores_count_a_missing_prediction_as_a_miss():
    scores = label_scores(["true", "false", "true"], ["true", None, "false"], ("true", "false"))
    assert scores["accuracy"] == pytest.approx(1 / 3)
    assert scores["f1"] == pytest.approx({"true": 2 / 3, "false": 0.0})
    assert label_scores([], [], ("true", "false"))["macro_f1"] is None


def test_an_answer_is_false_only_when_a_checked_claim_is():
    checked = lambda truth: {"status": "checked", "truth": truth}  # noqa: E731
    abstained = {"status": "abstained", "truth": None}
    error = {"status": "error", "truth": None}
    assert response_label([checked("true"), abstained, error]) == "true"
    assert response_label([checked("true"), checked("false")]) == "false"
    assert response_label([abstained, error, None]) is None  # never false for want of checks


def test_truth_of_reads_the_label_space():
    assert truth_of("false", get_label_space("true_false")) == "false"
    radar = get_label_space("true_half_false")
    assert [truth_of(x, radar) for x in radar.labels] == ["true", None, "false"]


class _Record:
    def __init__(self, gold, predicted, status, task, calls=3, latency=2.0):
        from veracity.core.types import Usage, Verdict

        self.gold = self.gold_original = gold
        self.predicted, self.status, self.latency_s = predicted, status, latency
        self.verdict = Verdict(
            label=predicted, label_space="true_false", method="direct",
            abstained=predicted is None, abstain_reason="none" if predicted is None else None,
            usage=Usage(llm_calls=calls), metadata={"document_task": task},
        )  # fmt: skip

    @property
    def usage(self):
        return self.verdict.usage


def _claim(status, truth, checkworthy=True):
    return {"status": status, "truth": truth, "checkworthy": checkworthy}


def test_checkworthiness_and_abstaining_answers_are_scored_apart():
    gold = [
        {"label": "false", "category": "factual", "checkworthy": True,
         "check": {"status": "checked", "truth": "false"}, "predicted_category": "factual"},
        {"label": None, "category": "opinion", "checkworthy": False, "check": None,
         "predicted_category": "factual"},
    ]  # fmt: skip
    task = {"matcher": "lexical", "similarity": [[0.9, 0.1], [0.2, 0.8]], "gold": gold,
            "extracted": [_claim("checked", "false"), _claim("checked", "true")]}  # fmt: skip
    none_checked = {**task, "extracted": [_claim("abstained", None)], "similarity": [[0.9, 0]]}
    found = document_metrics([_Record("false", "false", "ok", task),
                              _Record("false", None, "abstained", none_checked)], 0.5)  # fmt: skip
    worth = found.checkworthiness
    # over the annotated claims (twice, one answer each): the factual one said factual,
    # the opinion said factual too: factual P 1/2, R 1
    assert worth["available"] and worth["claims"] == 4
    assert worth["f1_factual"] == pytest.approx(2 / 3) and worth["macro_f1"] == pytest.approx(1 / 3)
    # the older figure, over matched pairs: (factual, factual) twice and (an opinion, said
    # factual): factual P 2/3, R 1
    assert worth["matched_pairs"] == 3 and worth["matched_pairs_f1_factual"] == pytest.approx(0.8)
    assert worth["matched_pairs_macro_f1"] == pytest.approx(0.4)
    assert found.extracted_claims["matched_to_unlabelled"] == 1
    response = found.response
    assert (response["answered"], response["abstained"], response["predicted_false"]) == (1, 1, 1)
    assert response["accuracy"] == 0.5 and response["accuracy_answered"] == 1.0
    assert found.gold_claims["n"] == 2 and found.gold_claims["checked"] == 2
    assert found.cost["llm_calls_per_document"] == 3.0 and found.flat()["extraction.recall"] == 0.75


def test_claim_matcher_by_words_by_embedding_and_the_fallback():
    lexical = ClaimMatcher("lexical")
    assert lexical.name == "lexical"
    assert lexical.similarity(["a b c d"], ["a b c e", "x"]) == [[0.6, 0.0]]
    hashing = ClaimMatcher("embedding", "hashing")
    assert hashing.name == "embedding:hashing"
    [[same, other]] = hashing.similarity(["Curie won two prizes"],
                                         ["Curie won two prizes", "Rain falls"])  # fmt: skip
    assert same == pytest.approx(1.0) and other < 0.5
    fallback = ClaimMatcher("auto", "/no/such/model")
    assert fallback.name == "lexical" and "word overlap" in (fallback.note or "")
    with pytest.raises(EvalError, match=r"document\.match: lexical"):
        ClaimMatcher("embedding", "/no/such/model")


def test_the_summary_names_the_document_figures_and_other_engines_build_the_task(tmp_path, llm):
    out = tmp_path / "run"
    result = _eval(tmp_path, out)
    assert result.exit_code == 0, result.output
    assert "claim extraction recall" in result.output and "0.308" in result.output  # 4/13
    assert "check-worthiness F1 (factual)" in result.output and "n/a" in result.output
    cfg = RunStore(out).read_config()
    run = prepare_run(RunConfig.model_validate(cfg), tmp_path / "again", llm=scripted())
    built = []

    class Elsewhere:
        """An engine whose worker builds its method from the spec, over the run it built
        (as a Ray worker does), from the picklable recipe alone."""

        def describe(self):
            return {"engine": "elsewhere"}

        async def run(self, spec, method, jobs, concurrency, sink):
            task = method  # the driver's task gives the worker its claim method and model
            worker_run = SimpleNamespace(method=task.method, llm=task.checker.extractor.llm)
            over = pickle.loads(pickle.dumps(spec.over))
            built.append(over(worker_run))
            async for job in jobs:
                sink(await check_job(built[-1], built[-1].label_space, job))

    asyncio.run(execute(run, 1, engine=Elsewhere()))
    run.store.release()
    assert built and built[0] is not run.method and type(built[0]) is type(run.method)
    assert [r.predicted for r in run.store.read_predictions()] == [
        r.predicted for r in RunStore(out).read_predictions()
    ]


def test_a_failed_extraction_is_the_answers_error_and_its_claims_are_still_checked(
    tmp_path, llm, monkeypatch
):
    monkeypatch.setattr(sys.modules[__name__], "BROKEN_EXTRACTION", ("Jack Dorsey",))
    out = tmp_path / "run"
    result = _eval(tmp_path, out)
    assert result.exit_code == 0, result.output
    found = json.loads((out / "document_metrics.json").read_text())
    assert found["extraction"]["failed"] == 1 and found["extraction"]["extracted_claims"] == 4
    assert found["response"]["errors"] == 1 and found["response"]["abstained"] == 0
    assert found["gold_claims"]["n"] == 13  # the failed answer's 7 claims checked all the same
    second = json.loads((out / "predictions.jsonl").read_text().splitlines()[1])
    assert second["status"] == "error" and "claim extraction failed" in second["verdict"]["error"]
    assert second["verdict"]["usage"]["llm_calls"] >= 7  # its gold checks are counted
    task = second["verdict"]["metadata"]["document_task"]
    assert task["extraction_llm_calls"] >= 1  # and so are the failed extraction's attempts
    assert second["verdict"]["usage"]["llm_calls"] == (
        task["gold_llm_calls"] + task["extraction_llm_calls"]
    )
