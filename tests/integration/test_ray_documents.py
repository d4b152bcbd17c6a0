"""`veracity batch --kind document --engine ray`: documents take the road of every input, so
Ray workers check them (``ray.init(num_cpus=2)``, one cluster for the module).

Extraction is rule-only here (each sentence a claim, no model call), and the echo model
answers each claim with the label it names (``say:LABEL``), so every document's report is
known whichever process checks it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from veracity import runtime
from veracity.evaluation.batch import DocumentColumns, Rows, prepare_batch, run_batch
from veracity.evaluation.ray_engine import RayEngine, RayOptions
from veracity.testing.echo import EchoBackend

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.ray, pytest.mark.slow]

N = 8
RULES_ONLY = {"decompose": False, "decontextualise": False, "checkworthiness": False}


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _rows():
    rows = []
    for i in range(N):
        second = "REFUTED" if i % 2 else "SUPPORTED"
        text = f"Fact {i} holds say:SUPPORTED. Fact {i} also holds say:{second}."
        rows.append((None, {"id": f"d{i}", "text": text}))
    return rows


def _batch(run_dir, engine=None):
    flags = {"method": "direct", "labels": "supported_refuted", "llm": {"cache_mode": "off"}}
    cfg = runtime.layered_config(flags=flags)
    columns = DocumentColumns(id="id")
    batch = prepare_batch(cfg, columns, run_dir, extraction=RULES_ONLY, llm=EchoBackend(0.01)())
    rows = list(Rows(iter(_loc(_rows())), columns))
    asyncio.run(run_batch(batch, iter(rows), concurrency=2, engine=engine))
    batch.close()
    return {r.id: r for r in batch.store.read_predictions()}


def _loc(rows):
    from veracity.core.readers import Loc

    return [(Loc(Path("docs.jsonl"), n + 1), raw) for n, (_, raw) in enumerate(rows)]


def _outcomes(records):
    return {
        i: (r.status, [(o.claim.text, o.verdict.label) for o in r.report.claims])
        for i, r in records.items()
    }


def test_ray_workers_check_documents_as_the_local_engine_does(cluster, tmp_path):
    local = _batch(tmp_path / "local")
    engine = RayEngine(RayOptions(workers=2), backend=EchoBackend(0.01))
    remote = _batch(tmp_path / "ray", engine=engine)
    assert len(remote) == N and _outcomes(remote) == _outcomes(local)
    assert all(r.status == "ok" for r in remote.values())
    odd = remote["d1"].report
    assert (odd.summary.supported, odd.summary.refuted) == (1, 1)
    assert remote["d0"].report.summary.factuality == 1.0
    assert engine.workers_started == 2
