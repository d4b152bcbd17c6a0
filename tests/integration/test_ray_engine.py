"""`--engine ray` on a real local Ray cluster (``ray.init(num_cpus=2)``, one per module).

The scripted model names each row's label in advance (``say:LABEL``), so every
prediction is known whichever process checks it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from veracity import runtime
from veracity.core import registry
from veracity.datasets.generic import ColumnSpec, GenericDataset
from veracity.evaluation.batch import Rows, prepare_batch, read_rows, run_batch
from veracity.evaluation.ray_engine import RayEngine, RayOptions
from veracity.evaluation.runner import prepare_run, run_session
from veracity.testing.echo import EchoBackend

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.ray, pytest.mark.slow]

N = 50
COLUMNS = ColumnSpec(text="claim", id="cid")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _say(i: int) -> str:
    return "SUPPORTED" if i % 3 else "REFUTED"


@pytest.fixture
def claims(tmp_path):
    path = tmp_path / "claims.jsonl"
    rows = [{"cid": f"c{i:02d}", "claim": f"claim {i} say:{_say(i)}"} for i in range(N)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _config():
    # no LLM cache: the workers keep the environment of the cluster's start, so they would
    # read an earlier test's user cache (VERACITY_HOME) and answer without calling
    flags = {"method": "direct", "labels": "supported_refuted", "llm": {"cache_mode": "off"}}
    return runtime.layered_config(flags=flags)


def _batch(path, run_dir, engine=None, emit=None, threaded=False):
    batch = prepare_batch(_config(), COLUMNS, run_dir, llm=EchoBackend(0.02)())
    jobs = Rows(read_rows(path, COLUMNS), COLUMNS)
    options = {"concurrency": 4, "engine": engine, "emit": emit, "threaded": threaded}
    asyncio.run(run_batch(batch, iter(jobs), **options))
    return batch.store.read_predictions()


def _by_id(records):
    return {r.id: (r.predicted, r.status, r.score) for r in records}


def test_ray_predicts_what_the_local_engine_does_none_lost_or_duplicated(cluster, claims, tmp_path):
    local = _batch(claims, tmp_path / "local")
    engine = RayEngine(RayOptions(workers=2), backend=EchoBackend(0.02))
    remote = _batch(claims, tmp_path / "ray", engine=engine, threaded=True)  # as from stdin
    assert len(remote) == N and len({r.id for r in remote}) == N
    assert _by_id(remote) == _by_id(local)
    assert {r.predicted for r in remote} == {"SUPPORTED", "REFUTED"}
    assert all(r.status == "ok" for r in remote)
    assert engine.workers_started == 2


def test_a_killed_worker_is_replaced_and_its_examples_checked_again(cluster, claims, tmp_path):
    engine = RayEngine(RayOptions(workers=2), backend=EchoBackend(0.1))
    killed: list[int] = []
    seen: list[str] = []

    def kill_one_mid_run() -> None:  # beside the run, as a crash would come
        deadline, first_busy = time.monotonic() + 120, None
        while time.monotonic() < deadline:
            busy = {a: n for a, n in engine.workers().items() if n > 0}
            if busy and first_busy is None:
                first_busy = time.monotonic()
            if busy and time.monotonic() - first_busy > 0.25:  # some rows done already
                actor, load = max(busy.items(), key=lambda kv: kv[1])
                killed.append(load)
                ray.kill(actor)
                return
            time.sleep(0.005)

    killer = threading.Thread(target=kill_one_mid_run, daemon=True)
    killer.start()
    records = _batch(claims, tmp_path / "ray", engine=engine, emit=lambda r: seen.append(r.id))
    killer.join(5)
    assert killed
    assert killed and killed[0] > 0  # it died with examples in flight
    assert engine.workers_started == 3  # one replacement
    assert sorted(seen) == sorted(r.id for r in records)  # each result reported once
    assert len(records) == N and len({r.id for r in records}) == N
    assert all(r.status == "ok" for r in records)
    assert {r.id: r.predicted for r in records} == {f"c{i:02d}": _say(i) for i in range(N)}


def test_eval_on_ray_with_a_global_llm_limit_matches_local(cluster, claims, tmp_path):
    name = "ray_test_claims"
    if name not in registry.datasets:
        spec = {"path": claims, "text": "claim", "id": "cid", "label": "gold"}
        labelled = claims.with_name("labelled.jsonl")
        rows = [json.loads(line) for line in claims.read_text().splitlines()]
        for i, row in enumerate(rows):
            row["gold"] = _say(i)
        labelled.write_text("".join(json.dumps(r) + "\n" for r in rows))
        spec["path"] = labelled
        registry.datasets.register(
            name, GenericDataset(**spec, label_space="supported_refuted", name=name)
        )
    cfg = _config().with_overrides({"dataset": name, "concurrency": 4})

    def evaluate(run_dir, engine=None):
        run = prepare_run(cfg, run_dir, llm=EchoBackend(0.05)())
        return asyncio.run(run_session(run, engine=engine)), run.store.read_predictions()

    local_metrics, local = evaluate(tmp_path / "local")
    engine = RayEngine(RayOptions(workers=2, llm_limit=2), backend=EchoBackend(0.05))
    ray_metrics, remote = evaluate(tmp_path / "ray", engine)
    assert _by_id(remote) == _by_id(local) and len(remote) == N
    assert ray_metrics.accuracy == local_metrics.accuracy == 1.0
    assert engine.llm_slots is not None and engine.llm_slots["peak"] == 2  # never above 2
