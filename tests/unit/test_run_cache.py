"""The service keeps built runs by resolved spec (issue 39, item 5), for every front end:
the same spec is one run (its local index loaded once), other request options are another
run, runs pushed out are closed once their checks end, one run checks concurrently as
separate runs would, REST reuses runs across requests, and batch and evaluation are
refused what `check` is refused, before anything is built."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from _eval_fixtures import config as eval_config
from _eval_fixtures import scripted_llm as eval_llm

from veracity.core.config import RunConfig
from veracity.core.errors import EvalError
from veracity.core.types import Document
from veracity.datasets.generic import ColumnSpec
from veracity.evaluation.batch import prepare_batch
from veracity.evaluation.runner import prepare_run
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.retrieval.local.index import LocalIndex
from veracity.runtime.home import home_paths
from veracity.runtime.service import CheckRefused, RunCache, Veracity
from veracity.server import BackgroundServer, ServerSettings, create_app
from veracity.testing import ScriptedLLM

TOPICS = ["moon", "river", "census", "vaccine", "glacier", "tariff"]
SOURCES = {"corpus": {"type": "local", "index": "mini"}}


@pytest.fixture
def index():
    """A BM25 index ``mini`` under the test's home: one document per topic."""
    docs = [
        Document(id=t, title=t, text=f"A report on the {t}: the {t} figure is {i}.", source="x")
        for i, t in enumerate(TOPICS)
    ]
    build_local_corpus("mini", docs, mode="bm25", indexes_dir=home_paths().indexes)


@pytest.fixture
def loads(monkeypatch):
    """Every load of a local index from disk."""
    made: list[str] = []
    real = LocalIndex.load.__func__

    def counting(cls, folder, **kw):
        made.append(folder.name)
        return real(cls, folder, **kw)

    monkeypatch.setattr(LocalIndex, "load", classmethod(counting))
    return made


def rag_llm(latency_s: float = 0.0) -> ScriptedLLM:
    """Answers ``false`` for a claim marked ``(no)``, ``true`` for the rest, each call after
    `latency_s` (so concurrent checks interleave)."""
    llm = ScriptedLLM(latency_s=latency_s)
    llm.on(r"\(no\)", '{"cited": [1], "label": "false"}')
    llm.on(".*", '{"cited": [1], "label": "true"}')
    return llm


def rag_service(**kw) -> Veracity:
    return Veracity(RunConfig(method="rag", sources=SOURCES), llm=rag_llm(0.01), **kw)


def test_the_same_spec_is_one_run_and_its_index_loads_once(index, loads, builds):
    v = rag_service()
    first = asyncio.run(v.check("The moon figure is 0 (no)."))
    second = asyncio.run(v.check("The river figure is 1 (no)."))
    assert (first.label, second.label) == ("false", "false")
    assert first.evidence[0].document.id.startswith("moon")
    assert len(builds) == 1 and loads == ["mini"]


def test_other_request_options_are_another_run_and_the_kept_method_is_unchanged(index, builds):
    v = Veracity(RunConfig(method="rag", sources=SOURCES), llm=rag_llm())
    plain = v.plan("a claim").run
    tuned = v.plan("a claim", options={"top_k": 2}).run
    assert tuned is not plain and tuned.spec.method_config.top_k == 2
    assert plain.method.config.top_k == 5  # the first run's method is not touched
    assert v.plan("another claim", options={"top_k": 2}).run is tuned
    assert v.plan("another claim").run is plain
    assert len(builds) == 2


def test_a_run_pushed_out_is_closed_and_the_service_closes_the_rest(index, builds):
    v = Veracity(RunConfig(sources=SOURCES), llm=rag_llm(), runs_kept=2)
    direct = v.plan("a claim").run
    cot = v.plan("a claim", method="cot").run
    assert not direct.closed and not cot.closed
    rag = v.plan("a claim", method="rag").run
    assert direct.closed and not cot.closed and not rag.closed
    assert v.plan("a claim", method="cot").run is cot  # still kept
    v.close()
    assert cot.closed and rag.closed
    assert v.plan("a claim", method="cot").run is not cot  # built afresh after close
    assert len(builds) == 4


def test_a_run_pushed_out_during_a_check_closes_when_the_check_ends(index):
    async def scenario():
        v = Veracity(RunConfig(method="rag", sources=SOURCES), llm=rag_llm(0.2), runs_kept=1)
        plan = v.plan("The moon figure is 0 (no).")
        closes = []
        real = plan.run.aclose

        async def spy():
            closes.append(plan.run._checking)
            await real()

        plan.run.aclose = spy
        checking = asyncio.create_task(plan.check())
        await asyncio.sleep(0.05)  # the check is under way
        v.plan("another claim", method="cot")  # pushes the rag run out
        await asyncio.sleep(0)
        assert not plan.run.closed and closes == []
        verdict = await checking
        assert verdict.label == "false" and plan.run.closed and closes == [0]
        await v.aclose()

    asyncio.run(scenario())


def test_concurrent_checks_on_one_kept_run_match_separate_runs(index):
    claims = [f"The {t} figure is {i}{' (no)' * (i < 3)}." for i, t in enumerate(TOPICS)]

    async def together():
        v = rag_service()
        plans = [v.plan(c) for c in claims]
        assert len({id(p.run) for p in plans}) == 1
        return await asyncio.gather(*(p.check() for p in plans))

    async def apart():
        out = []
        for c in claims:
            async with rag_service() as v:
                out.append(await v.check(c))
        return out

    shared, separate = asyncio.run(together()), asyncio.run(apart())

    def seen(verdict):
        return verdict.label, [e.document.id for e in verdict.evidence], verdict.error

    assert [seen(v) for v in shared] == [seen(v) for v in separate]
    assert [v.label for v in shared] == ["false"] * 3 + ["true"] * 3
    assert [v.evidence[0].document.id.split("#")[0] for v in shared] == TOPICS


def test_rest_reuses_the_run_across_requests(index, loads, builds, tmp_path):
    cfg = RunConfig(method="rag", sources=SOURCES)
    settings = ServerSettings(data_dir=tmp_path / "srv", rate_per_minute=0)
    app = create_app(settings, run_config=cfg, llm=rag_llm())
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        labels = []
        for text in ("The moon figure is 0 (no).", "The tariff figure is 5."):
            job = http.post("/v1/checks", json={"input": {"kind": "claim", "text": text}})
            assert job.status_code == 202, job.text
            labels.append(_finished(http, job.json()["id"])["verdict"]["label"])
    assert labels == ["false", "true"]
    assert len(builds) == 1 and loads == ["mini"]


def _finished(http: httpx.Client, job_id: str) -> dict:
    import time

    deadline = time.monotonic() + 30
    while (job := http.get(f"/v1/checks/{job_id}").json())["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, job
        time.sleep(0.02)
    assert job["status"] == "done", job
    return job


def test_run_cache_builds_a_key_once_across_threads():
    import threading
    import time

    cache, made = RunCache(2), []

    class FakeRun:
        closed = False

        def retire(self):
            self.closed = True

    def build():
        time.sleep(0.05)
        made.append(FakeRun())
        return made[-1]

    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("k", build))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and all(r is made[0] for r in got)


# ------------------------------------------------------------------ batch and evaluation


def test_evaluation_is_refused_what_check_is_refused_before_anything_is_built(tmp_path, builds):
    with pytest.raises(CheckRefused) as refused:
        Veracity(RunConfig(method="s2mad"), llm=eval_llm()).plan("a claim")
    assert refused.value.title == "input kind not accepted"
    with pytest.raises(EvalError, match="'s2mad' checks post, 'toy_eval' holds claims"):
        prepare_run(eval_config(tmp_path, method="s2mad"), tmp_path / "run", llm=eval_llm())
    with pytest.raises(EvalError, match=r"s2mad checks post inputs, not a claim \(see --kind\)"):
        prepare_batch(RunConfig(method="s2mad"), ColumnSpec(), tmp_path / "b", llm=eval_llm())
    assert builds == []  # refused before a run was built


def test_evaluation_and_batch_build_through_the_service(tmp_path, builds):
    run = prepare_run(eval_config(tmp_path), tmp_path / "run", llm=eval_llm())
    run.store.release()
    batch = prepare_batch(RunConfig(), ColumnSpec(), tmp_path / "b", llm=eval_llm())
    batch.store.release()
    assert len(builds) == 2 and builds[0].spec.dataset == "toy_eval"
