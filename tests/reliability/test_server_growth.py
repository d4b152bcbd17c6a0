"""Server growth (issue 23, item 11): the job database is pruned by age and by size (at
start and periodically), the history is listed from summary columns (older databases get
them on open and still list), and heavy reads run off the event loop, so probes answer
while a long listing or a large verdict is being read.

Real components: a server on 127.0.0.1 (restarted on the same data directory where the
case needs it), its SQLite file, and `veracity serve` for the options.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from veracity.core.config import RunConfig
from veracity.core.types import Verdict
from veracity.server.retention import RetentionPolicy
from veracity.server.store import JobStore
from veracity.testing import ScriptedLLM

from .conftest import run_cli

httpx = pytest.importorskip("httpx")
server_mod = pytest.importorskip("veracity.server")

pytestmark = [pytest.mark.server]

NO_RETENTION = {"retention_days": 0, "retention_mb": 0}


def post(n: int, kb: int = 100) -> dict:
    """A post of about `kb` kilobytes (replies of 400 characters)."""
    replies = [{"id": f"r{i}", "text": f"reply {i}: " + "x" * 390} for i in range(kb * 1000 // 420)]
    return {"input": {"kind": "post", "text": f"Post {n} says so.", "replies": replies}}


@contextmanager
def live(data: Path, **settings) -> Iterator[tuple[httpx.Client, object]]:
    opts = {"rate_per_minute": 0, "data_dir": data, "queue_size": 100, **settings}
    llm = ScriptedLLM(default='{"label": "false"}')
    app = server_mod.create_app(
        server_mod.ServerSettings(**opts), run_config=RunConfig(method="direct"), llm=llm
    )
    with (
        server_mod.BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        yield client, app


def submit(client: httpx.Client, body: dict) -> str:
    resp = client.post("/v1/checks", json=body)
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def wait_done(client: httpx.Client, job_id: str) -> None:
    for _ in range(1200):
        if client.get(f"/v1/checks/{job_id}?trace=false").json()["status"] == "done":
            return
        time.sleep(0.02)
    raise AssertionError(f"{job_id} did not finish")


def db_bytes(data: Path) -> int:
    return sum(p.stat().st_size for p in data.glob("jobs.sqlite*") if p.is_file())


def listed(client: httpx.Client) -> list[str]:
    return [j["id"] for j in client.get("/v1/checks?limit=1000").json()["jobs"]]


def wait_for(check, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout_s} s for {what}")
        time.sleep(0.05)


# --------------------------------------------------------------------------- retention


def test_the_size_limit_keeps_the_newest_checks_and_shrinks_the_file(tmp_path, capsys):
    data = tmp_path / "server"
    with live(data, **NO_RETENTION) as (client, _):
        ids = [submit(client, post(n)) for n in range(24)]
        for job_id in ids:
            wait_done(client, job_id)
        events_of_newest = client.get(f"/v1/checks/{ids[-1]}/events").text
    grown = db_bytes(data)
    limit_mb = 1.0
    with live(data, retention_mb=limit_mb) as (client, _):  # pruned at start
        # the file itself shrinks: freed pages go back to the file system
        wait_for(lambda: db_bytes(data) <= limit_mb * 1e6 * 1.2, "the start's prune")
        kept = listed(client)
        gone = client.get(f"/v1/checks/{ids[0]}")
        replay = client.get(f"/v1/checks/{ids[-1]}/events").text
    shrunk = db_bytes(data)
    with capsys.disabled():
        print(f"\n24 posts of ~100 KB: {grown / 1e6:.1f} MB, after a {limit_mb} MB limit "
              f"{shrunk / 1e6:.2f} MB, {len(kept)} checks kept")  # fmt: skip
    assert grown > 2.5e6  # the case really is over the limit
    assert kept and kept == ids[::-1][: len(kept)]  # the newest ones, newest first
    assert gone.status_code == 404
    assert replay == events_of_newest  # what is kept is whole
    assert shrunk <= limit_mb * 1e6 * 1.2


def test_the_age_limit_deletes_only_old_finished_checks_with_their_events(tmp_path):
    data = tmp_path / "server"
    with live(data, **NO_RETENTION) as (client, _):
        ids = [
            submit(client, {"input": {"kind": "claim", "text": f"Claim {n}."}}) for n in range(6)
        ]
        for job_id in ids:
            wait_done(client, job_id)
    old = (datetime.now(timezone.utc) - timedelta(days=40)).isoformat()
    with sqlite3.connect(data / "jobs.sqlite") as db:  # three checks from 40 days ago
        db.executemany("UPDATE jobs SET created_at=? WHERE id=?", [(old, i) for i in ids[:3]])
    with live(data, retention_days=30, retention_mb=0) as (client, _):
        wait_for(lambda: len(listed(client)) == 3, "the start's prune")
        kept = set(listed(client))
    with sqlite3.connect(data / "jobs.sqlite") as db:
        orphans = db.execute(
            "SELECT count(*) FROM events WHERE job_id NOT IN (SELECT id FROM jobs)"
        ).fetchone()[0]
    assert kept == set(ids[3:])
    assert orphans == 0


def test_the_server_prunes_periodically_while_it_runs(tmp_path):
    data = tmp_path / "server"
    settings = {"retention_mb": 0.6, "retention_interval_s": 1, "retention_days": 0}
    with live(data, **settings) as (client, _):
        ids = []
        for n in range(16):
            ids.append(submit(client, post(n)))
            wait_done(client, ids[-1])
        wait_for(lambda: ids[0] not in listed(client), "a periodic prune", timeout_s=30)
        kept = listed(client)
    assert ids[-1] in kept and len(kept) < len(ids)


def test_a_prune_never_deletes_queued_or_running_checks(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    try:
        for n, status in enumerate(["running", "queued", "done", "failed"]):
            body = {"input": {"kind": "claim", "text": "y" * 300_000}}
            store.create(f"j{n}", body, method="direct", input_kind="claim", preview="y")
            if status != "queued":
                store.started(f"j{n}")
            if status in ("done", "failed"):
                store.finish(f"j{n}", status, verdict={"label": "x", "rationale": "z" * 200_000})
        report = store.prune(RetentionPolicy(max_age_days=0, max_mb=0.01))
        left = {r.id: r.status for r in store.history(10)}
    finally:
        store.close()
    assert left == {"j0": "running", "j1": "queued"}
    assert report.by_size == 2 and report.bytes_after < report.bytes_before


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--retention-days", "-1", "retention"),
        ("--retention-mb", "lots", "retention"),
        ("--retention-mb", "-5", "retention"),
    ],
)
def test_bad_retention_options_are_refused_with_a_clear_error(tmp_path, flag, value, words):
    result = run_cli(["serve", flag, value, "--data-dir", str(tmp_path / "d")], tmp_path / "h")
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert words in err.lower() and "Traceback" not in err


def test_bad_retention_variables_are_refused_with_a_clear_error(tmp_path):
    env = {"VERACITY_SERVER_RETENTION_DAYS": "a month"}
    result = run_cli(["serve", "--data-dir", str(tmp_path / "d")], tmp_path / "h", **env)
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert "retention_days" in err and "Traceback" not in err


# --------------------------------------------------------------------------- summaries

OLD_SCHEMA = """
CREATE TABLE jobs (
    n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,
    started_at TEXT, finished_at TEXT, status TEXT NOT NULL, request TEXT NOT NULL,
    method TEXT NOT NULL, input_kind TEXT NOT NULL, preview TEXT NOT NULL, label TEXT,
    score REAL, verdict TEXT, error TEXT, rerun_of TEXT
);
CREATE TABLE events (
    job_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
);
"""


def old_database(path: Path) -> dict[str, dict]:
    """A job database as versions before the summary columns wrote it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    inputs = {
        "claim1": {"kind": "claim", "text": "The bridge   closed\nyesterday."},
        "art1": {"kind": "article", "title": "Bridge shut", "body": "Engineers found cracks."},
        "post1": {"kind": "post", "text": "Bridge is gone!", "replies": [
            {"id": "a", "text": "no"}, {"id": "b", "text": "yes"}, {"id": "c", "text": "?"}]},
        "broken": None,  # a request that no longer parses: listed by its preview
    }  # fmt: skip
    verdict = Verdict(label="false", label_space="true_false", method="direct", score=0.1)
    verdict = verdict.model_dump(mode="json")
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
        for n, (job_id, item) in enumerate(inputs.items()):
            request = json.dumps({"input": item}) if item else "{not json"
            db.execute(
                "INSERT INTO jobs (id, created_at, finished_at, status, request, method, "
                "input_kind, preview, label, score, verdict) VALUES (?, ?, ?, 'done', ?, "
                "'direct', ?, ?, 'false', 0.1, ?)",
                (job_id, f"2024-01-0{n + 1}T00:00:00+00:00", f"2024-01-0{n + 1}T00:01:00+00:00",
                 request, (item or {}).get("kind", "claim"), f"preview of {job_id}",
                 json.dumps(verdict)),
            )  # fmt: skip
            db.execute(
                "INSERT INTO events VALUES (?, 1, 'status', ?)", (job_id, '{"status": "done"}')
            )
    return inputs


def test_a_database_from_before_the_summary_columns_opens_and_lists(tmp_path):
    data = tmp_path / "server"
    old_database(data / "jobs.sqlite")
    with live(data, **NO_RETENTION) as (client, _):
        api = {j["id"]: j for j in client.get("/v1/checks?limit=10").json()["jobs"]}
        page = client.get("/ui/history").text
        one = client.get("/v1/checks/art1").json()
        new = submit(client, {"input": {"kind": "claim", "text": "A new claim."}})
        wait_done(client, new)
        after = client.get("/ui/history").text
    assert set(api) == {"claim1", "art1", "post1", "broken"}
    assert api["post1"]["input_kind"] == "post" and api["art1"]["label"] == "false"
    assert "The bridge closed yesterday." in page
    assert "Bridge shut — Engineers found cracks." in page
    assert "Bridge is gone!" in page and "3 replies" in page
    assert "preview of broken" in page
    assert one["request"]["input"]["title"] == "Bridge shut"
    assert "A new claim." in after and "Bridge shut" in after
    with sqlite3.connect(data / "jobs.sqlite") as db:
        columns = {r[1] for r in db.execute("PRAGMA table_info(jobs)")}
        unfilled = db.execute("SELECT count(*) FROM jobs WHERE line IS NULL").fetchone()[0]
    assert {"line", "replies"} <= columns and unfilled == 0


def test_the_history_reads_no_request_or_verdict(tmp_path):
    """Stored requests and verdicts made unreadable: the list does not notice."""
    data = tmp_path / "server"
    with live(data, **NO_RETENTION) as (client, _):
        ids = [submit(client, post(n, kb=20)) for n in range(3)]
        for job_id in ids:
            wait_done(client, job_id)
    with sqlite3.connect(data / "jobs.sqlite") as db:
        db.execute("UPDATE jobs SET request='{broken', verdict='{broken'")
    with live(data, **NO_RETENTION) as (client, _):
        api = client.get("/v1/checks?limit=200")
        page = client.get("/ui/history?limit=200")
    assert api.status_code == 200 and [j["id"] for j in api.json()["jobs"]] == ids[::-1]
    assert page.status_code == 200 and "Post 1 says so." in page.text
    assert page.text.count(f"{len(post(0, kb=20)['input']['replies'])} replies") == 3


# --------------------------------------------------------------------------- event loop


class Gate:
    """Holds a store method in its worker thread until released, to see whether the
    event loop still answers while it runs."""

    def __init__(self, store, name: str):
        self.entered, self.release = threading.Event(), threading.Event()
        self.inner = getattr(store, name)
        setattr(store, name, self)

    def __call__(self, *args, **kwargs):
        self.entered.set()
        self.release.wait(30)
        return self.inner(*args, **kwargs)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("history", "/v1/checks?limit=200"),
        ("history", "/ui/history?limit=200"),
        ("get", "/v1/checks/{id}"),
        ("get", "/ui/checks/{id}/report"),
        ("get", "/ui/checks/{id}/input"),
        ("events", "/v1/checks/{id}/events"),
    ],
)
def test_probes_answer_while_a_heavy_read_is_under_way(tmp_path, method, path):
    with live(tmp_path / "server", **NO_RETENTION) as (client, app):
        job_id = submit(client, post(0, kb=50))
        wait_done(client, job_id)
        gate = Gate(app.state.store, method)
        result: dict = {}
        url = path.replace("{id}", job_id)
        reader = threading.Thread(target=lambda: result.update(r=client.get(url)))
        reader.start()
        assert gate.entered.wait(30), "the read never started"
        try:
            # the read is held inside the store; a loop it blocked could not answer
            with httpx.Client(base_url=str(client.base_url), timeout=10) as probe:
                health, ready = probe.get("/healthz"), probe.get("/readyz")
        finally:
            gate.release.set()
            reader.join(60)
    assert health.status_code == 200 and ready.status_code == 200
    assert result["r"].status_code == 200
