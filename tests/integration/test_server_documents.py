"""Document checks over REST on a real server (127.0.0.1) with a scripted model: submit
text or a URL, follow the claims in the event stream, poll, cancel, re-run, bad input."""

from __future__ import annotations

import json
import time

import httpx
import pytest
import respx
from server_support import GatedLLM, live_server, run_config, sse_events, wait_status
from test_server_api import assert_problem, submit

from veracity.runtime.home import user_http_client
from veracity.testing import ScriptedLLM
from veracity.testing.sources import table_resolver

pytestmark = pytest.mark.server

TEXT = "The Eiffel Tower is in Berlin. Klitschko sold his medal in 2012. I love Paris."
NO_SPLIT = {"decompose": False, "decontextualise": False}
CORRECTED = "The Eiffel Tower is in Paris."
PUBLIC = "93.184.216.34"


def held_checks(inner: ScriptedLLM) -> GatedLLM:
    """Answers like `inner`, but holds every claim check (``rag`` calls) until `gate` is
    set, so the page can be seen with its claims found and not yet checked."""
    return GatedLLM(inner, tags=("rag",))


def rag_llm() -> ScriptedLLM:
    """rag answers by the claim it is shown; the check-worthiness step by position."""
    llm = ScriptedLLM()
    llm.on(
        ".*", json.dumps({"claims": ["factual", "factual", "opinion"]}), tag="claims:checkworthy"
    )
    llm.on("Berlin", '{"cited": [1], "label": "false"}', tag="rag")
    llm.on(".*", '{"cited": [1], "label": "true"}', tag="rag")
    llm.on(".*", json.dumps({"correction": CORRECTED, "evidence": [1]}), tag="correct")
    return llm


def document(**fields) -> dict:
    body = {"input": {"kind": "document", "text": TEXT}, "method": "rag", "extraction": NO_SPLIT}
    body.update(fields)
    return body


def test_a_document_runs_claim_by_claim_and_streams_each_claim(tmp_path):
    with live_server(tmp_path, rag_llm(), config=run_config("rag")) as (_, client):
        job_id = submit(client, document(corrections=True))
        events = sse_events(client, job_id)
        job = wait_status(client, job_id, "done")
        lean = client.get(f"/v1/checks/{job_id}", params={"trace": "false"}).json()
        history = client.get("/v1/checks").json()["jobs"][0]
    traced = [e["data"] for e in events if e.get("event") == "trace"]
    kinds = [e["kind"] for e in traced]
    found = next(e for e in traced if e["kind"] == "claims_found")
    assert found["data"]["count"] == 3
    first = found["data"]["claims"][0]
    assert TEXT[slice(*first["spans"][0])] == "The Eiffel Tower is in Berlin."
    assert found["text"] == "Found 3 claims to check"
    done = {e["data"]["claim_id"]: e["data"] for e in traced if e["kind"] == "claim_checked"}
    assert kinds.index("claims_found") < min(i for i, k in enumerate(kinds) if k == "claim_checked")
    assert (done["c1"]["status"], done["c1"]["support"], done["c1"]["label"]) == (
        "checked",
        "refuted",
        "false",
    )
    assert done["c3"]["status"] == "not_checkworthy"
    # the result is the document report: spans, verdicts, counts, factuality, correction
    assert job["verdict"] is None and job["input_kind"] == "document"
    report = job["document"]
    assert report["document"]["text"] == TEXT and report["method"] == "rag"
    assert [c["status"] for c in report["claims"]] == ["checked", "checked", "not_checkworthy"]
    assert report["claims"][0]["correction"]["text"] == CORRECTED
    assert report["claims"][0]["correction"]["suggestion"] is True
    assert report["claims"][0]["verdict"]["trace"]["events"]
    assert report["summary"]["factuality"] == 0.5
    assert lean["document"]["claims"][0]["verdict"]["trace"]["events"] == []
    assert (history["label"], history["score"]) == ("1 of 2 supported", 0.5)
    assert (job["request"]["input"]["kind"], job["request"]["input"]["text"]) == ("document", TEXT)
    assert job["request"]["corrections"] is True


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"input": {"kind": "document"}}, ["text or its url"]),
        ({"input": {"kind": "document", "text": "x", "url": "https://a.example/"}}, ["one of"]),
        ({"input": {"kind": "document", "text": "   "}}, ["blank"]),
        ({"input": {"kind": "document", "url": "file:///etc/passwd"}}, ["http"]),
        ({"input": {"kind": "document", "text": "x" * 200_001}}, ["200000"]),
        ({"input": {"kind": "claim", "text": "A claim."}, "corrections": True}, ["document"]),
        (document(extraction={"max_sentences": 0}), ["max_sentences"]),
        (document(extraction={"max_sentences": 101}), ["at most 100 sentences"]),
        (document(extraction={"split": True}), ["split"]),
        (document(method="s2mad"), ["claim"]),
        (document(method="no_such_method"), ["no_such_method"]),
        (document(sources=["nowhere"]), ["nowhere"]),
    ],
)
def test_bad_document_requests_are_problems(tmp_path, body, words):
    with live_server(tmp_path, rag_llm(), config=run_config("rag")) as (_, client):
        resp = client.post("/v1/checks", json=body)
        listed = client.get("/v1/checks").json()["jobs"]
    problem = assert_problem(resp, 422)
    shown = json.dumps(problem).lower()
    assert all(w.lower() in shown for w in words), problem
    assert listed == []  # nothing was queued


def test_a_url_is_fetched_by_the_service_and_a_private_one_is_refused(tmp_path):
    page = f"<html><head><title>Facts</title></head><body><article><p>{TEXT}</p></article>"
    user_http_client().resolver = table_resolver({"news.example": [PUBLIC]})
    with (
        live_server(tmp_path, rag_llm(), config=run_config("rag")) as (server, client),
        respx.mock(assert_all_called=False) as router,
    ):
        router.route(host="127.0.0.1").pass_through()
        fetched = router.get(f"https://{PUBLIC}/facts", headers={"host": "news.example"}).mock(
            return_value=httpx.Response(200, text=page, headers={"content-type": "text/html"})
        )
        good = submit(
            client, document(input={"kind": "document", "url": "https://news.example/facts"})
        )
        job = wait_status(client, good, "done", "failed")
        bad_url = f"{server.url}/healthz"  # this server itself: a loopback address
        bad = submit(client, document(input={"kind": "document", "url": bad_url}))
        refused = wait_status(client, bad, "done", "failed")
    assert fetched.call_count == 1
    assert job["status"] == "done", job["error"]
    assert job["document"]["document"]["url"] == "https://news.example/facts"
    assert job["document"]["summary"]["refuted"] == 1
    assert refused["status"] == "failed" and "127.0.0.1" in refused["error"]
    assert refused["document"] is None


def test_cancel_then_rerun_a_document_check(tmp_path):
    gated = GatedLLM(rag_llm())
    with live_server(tmp_path, gated, config=run_config("rag"), workers=1) as (_, client):
        job_id = submit(client, document())
        assert gated.waiting.wait(10)
        assert client.delete(f"/v1/checks/{job_id}").status_code == 202
        cancelled = wait_status(client, job_id, "cancelled")
        again = client.post(f"/v1/checks/{job_id}/rerun")
        gated.gate.set()
        rerun = wait_status(client, again.json()["id"], "done")
    assert cancelled["document"] is None and cancelled["error"] == "cancelled on request"
    assert again.status_code == 202
    assert rerun["rerun_of"] == job_id and rerun["document"]["summary"]["claims"] == 3


def test_the_ui_fragments_of_a_document_check(tmp_path):
    with live_server(tmp_path, rag_llm(), config=run_config("rag")) as (_, client):
        job_id = submit(client, document())
        wait_status(client, job_id, "done")
        claim_job = submit(client, {"input": {"kind": "claim", "text": "Paris is in France."}})
        wait_status(client, claim_job, "done", "failed")
        report = client.get(f"/ui/checks/{job_id}/report").text
        live = client.get(f"/ui/checks/{job_id}/document").text
        method = client.get(f"/ui/checks/{job_id}/claims/c1")
        skipped = client.get(f"/ui/checks/{job_id}/claims/c3")
        odd = client.get(f"/ui/checks/{job_id}/claims/c1%3Cb%3E")
        not_document = client.get(f"/ui/checks/{claim_job}/document")
        shown = client.get(f"/ui/checks/{job_id}/input").text
    marked = '<mark class="claim-mark v-refuted" data-claims="c1"'
    assert marked in report and marked in live  # finished: the same view either way
    assert 'id="usage"' in report and 'data-done="yes"' in live
    assert method.status_code == 200 and "memory" in method.text
    assert skipped.status_code == 404  # not check-worthy: no verdict, no method view
    assert odd.status_code == 422
    assert not_document.status_code == 404 and "not a document" in not_document.text
    # the text is shown once, in the annotated document, not again above it
    assert "Document checked" in shown and "Eiffel Tower" not in shown


def test_a_cancelled_document_keeps_what_it_had_found(tmp_path):
    held = held_checks(rag_llm())
    with live_server(tmp_path, held, config=run_config("rag")) as (_, client):
        job_id = submit(client, document())
        deadline = time.monotonic() + 30
        while "v-pending" not in client.get(f"/ui/checks/{job_id}/document").text:
            assert time.monotonic() < deadline, "the claims were never found"
            time.sleep(0.05)
        assert client.delete(f"/v1/checks/{job_id}").status_code == 202
        wait_status(client, job_id, "cancelled")
        report = client.get(f"/ui/checks/{job_id}/report").text
        held.gate.set()
    assert "cancelled on request" in report and "the check stopped" in report
    assert report.count('class="claim-mark v-pending"') == 2
    assert report.count('class="claim-mark v-skipped"') == 1
    assert "Not checked (the check stopped)" in report
