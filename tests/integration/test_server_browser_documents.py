"""A document check in the web UI, in real headless Chromium (Debian's, driven by
Playwright) against a live server on a scripted model: the claims appear in place as
pending highlights, change colour as each is checked, and a highlight opens its claim's
evidence, rationale and suggested correction. Screenshots go under the test run's
temporary directory (or $VERACITY_TEST_ARTIFACTS)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from server_support import live_server, run_config
from test_server_documents import held_checks

from browser_support import TIMEOUT_MS, chromium
from veracity.llm.base import LLMRequest
from veracity.testing import ScriptedLLM

pytestmark = [pytest.mark.browser, pytest.mark.server]

browser = pytest.fixture(scope="module")(chromium)

TEXT = (
    "The Eiffel Tower is in Berlin. Klitschko sold his medal in 2012. "
    "I think <b>Paris</b> is lovely."
)
CORRECTED = "The Eiffel Tower is in Paris."


def _fenced(request: LLMRequest, tag: str) -> list[str]:
    prompt = "\n".join(str(m.content) for m in request.messages if m.role == "user")
    return [t.strip() for t in re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", prompt, re.S)]


def scripted(invent: str | None = None) -> ScriptedLLM:
    """Each sentence is one claim, already standing alone; the third is an opinion; rag
    refutes the claim about Berlin and supports the rest; corrections from evidence [1].
    `invent`: a claim in no sentence, added to the second sentence's."""

    def decompose(r: LLMRequest) -> str:
        found = _fenced(r, "sentence")[:1]
        extra = [invent] if invent and found and "Klitschko" in found[0] else []
        return json.dumps({"claims": found + extra})

    def window(r: LLMRequest) -> str:  # the same claims from one window of every sentence
        kinds = ("factual", "factual", "opinion")
        claims = []
        for k, sentence in enumerate(_fenced(r, "sentence"), 1):
            extra = [invent] if invent and "Klitschko" in sentence else []
            for text in [sentence, *extra]:
                claims.append({"sentences": [k], "text": text, "category": kinds[k - 1]})
        return json.dumps({"claims": claims})

    llm = ScriptedLLM()
    llm.on(".*", window, tag="claims:window")
    llm.on(".*", decompose, tag="claims:decompose")
    llm.on(
        ".*", lambda r: json.dumps({"claims": _fenced(r, "claim")}), tag="claims:decontextualise"
    )
    llm.on(
        ".*", json.dumps({"claims": ["factual", "factual", "opinion"]}), tag="claims:checkworthy"
    )
    llm.on(
        "Berlin",
        json.dumps({"cited": [1], "label": "false", "reasoning": "The sources put it elsewhere."}),
        tag="rag",
    )
    llm.on(".*", '{"cited": [1], "label": "true", "reasoning": "A source says so."}', tag="rag")
    llm.on(".*", json.dumps({"correction": CORRECTED, "evidence": [1]}), tag="correct")
    return llm


@pytest.fixture
def shots(tmp_path_factory) -> Path:
    root = os.environ.get("VERACITY_TEST_ARTIFACTS")
    folder = Path(root) if root else tmp_path_factory.getbasetemp() / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("dialog", lambda d: errors.append(f"a dialog opened: {d.message}"))
    yield pg
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


def _marks(page, verdict: str):
    return page.locator(f"#doc-text mark.claim-mark.v-{verdict}")


def test_a_document_is_marked_in_place_as_its_claims_are_checked(tmp_path, page, shots):
    held = held_checks(scripted())
    config = run_config("rag", method_config={"reasoning": True})  # rag says why
    with live_server(tmp_path, held, config=config) as (server, _):
        page.goto(server.url + "/")
        page.get_by_label("Document (each of its claims)").check()
        page.get_by_label("Document text").fill(TEXT)
        page.get_by_label("Method").select_option("rag")
        page.get_by_label("Suggest a correction for each refuted claim").check()
        page.get_by_role("button", name="Check").click()
        page.wait_for_url("**/checks/*")
        # found, not checked yet: two pending highlights, the opinion left unchecked
        _marks(page, "pending").nth(1).wait_for()
        assert _marks(page, "pending").count() == 2
        assert _marks(page, "skipped").count() == 1
        assert "Finding the claims" not in page.locator("#document").inner_text()
        page.screenshot(path=str(shots / "document-pending.png"), full_page=True)
        held.gate.set()
        page.locator("#document[data-done=yes]").wait_for()
        assert page.locator("#status").inner_text().startswith("done")
        refuted, supported = _marks(page, "refuted"), _marks(page, "supported")
        assert refuted.count() == 1 and supported.count() == 1
        assert _marks(page, "pending").count() == 0
        assert refuted.inner_text() == "The Eiffel Tower is in Berlin."
        # the document's text is text: its markup is shown, never run or rendered
        assert page.locator("#doc-text b").count() == 0
        assert "<b>Paris</b>" in page.locator("#doc-text").inner_text()
        assert "Factuality" in page.locator("#doc-totals").inner_text()
        # a highlight opens its claim: evidence, rationale, the correction as a suggestion
        refuted.click()
        details = page.locator("#claim-c1")
        assert details.get_attribute("open") is not None
        assert refuted.get_attribute("class").split()[-1] == "selected"
        text = details.inner_text()
        assert "Auction report" in text and "The sources put it elsewhere." in text
        assert CORRECTED in text and "suggestion, not verified" in text
        # and the method's own view, loaded for that claim (rag: its searches)
        details.locator(".claim-method li").first.wait_for()
        assert "memory" in details.locator(".claim-method").inner_text()
        page.screenshot(path=str(shots / "document-checked.png"), full_page=True)
        # a row of the table selects its claim too
        page.locator("a.claim-link[data-claim=c2]").click()
        assert page.locator("#claim-c2").get_attribute("open") is not None
        # the permalink shows the finished document to a new visitor
        page.goto(page.url)
        page.locator("#document[data-done=yes]").wait_for()
        assert _marks(page, "refuted").count() == 1


def test_a_document_address_that_is_not_public_fails_with_the_reason(tmp_path, page):
    with live_server(tmp_path, scripted(), config=run_config("rag")) as (server, _):
        page.goto(server.url + "/")
        page.get_by_label("Document (each of its claims)").check()
        page.get_by_label("Or a web page to fetch (URL)").fill(server.url + "/healthz")
        page.get_by_role("button", name="Check").click()
        page.wait_for_url("**/checks/*")
        page.locator(".verdict.failed").wait_for()
        assert "127.0.0.1" in page.locator(".verdict.failed").inner_text()
        assert page.locator("#status").inner_text().startswith("failed")


def test_the_form_needs_text_or_an_address_not_both(tmp_path, page):
    with live_server(tmp_path, scripted(), config=run_config("rag")) as (server, _):
        page.goto(server.url + "/")
        page.get_by_label("Document (each of its claims)").check()
        page.get_by_role("button", name="Check").click()
        error = page.locator("#form-error")
        error.wait_for()
        assert "text or its address" in error.inner_text()
        page.get_by_label("Document text").fill(TEXT)
        page.get_by_label("Or a web page to fetch (URL)").fill("https://news.example/a")
        page.get_by_role("button", name="Check").click()
        page.locator("#form-error", has_text="not both").wait_for()
        assert page.url.rstrip("/") == server.url


def _text_shown(page) -> int:
    """How many blocks of the page show the document's text (the claims table and the
    progress list name single claims, not the text)."""
    blocks = page.locator("#checked-input, #doc-text").all_inner_texts()
    return sum("Klitschko sold his medal in 2012. I think" in b for b in blocks)


def test_the_page_says_checking_while_it_runs_and_shows_the_text_once(tmp_path, page, shots):
    """Issue 41 item 5: the heading said "Document checked" while the check ran, and the
    text was shown twice (its opening above, the annotated text below). Item 4: a claim
    the model invented is dropped and listed, never marked in the text."""
    invented = "The whole text is written by other people or programs."
    held = held_checks(scripted(invent=invented))
    with live_server(tmp_path, held, config=run_config("rag")) as (server, _):
        page.goto(server.url + "/")
        page.get_by_label("Document (each of its claims)").check()
        page.get_by_label("Document text").fill(TEXT)
        page.get_by_label("Method").select_option("rag")
        page.get_by_role("button", name="Check").click()
        page.wait_for_url("**/checks/*")
        _marks(page, "pending").nth(1).wait_for()
        assert page.locator("#checked-heading").inner_text() == "Document being checked"
        assert _text_shown(page) == 1
        assert invented in page.locator("#doc-dropped").inner_text()
        page.screenshot(path=str(shots / "document-running.png"), full_page=True)
        held.gate.set()
        page.locator("#document[data-done=yes]").wait_for()
        page.locator("#checked-heading", has_text="Document checked").wait_for()
        assert _text_shown(page) == 1
        assert "Dropped: not in the text (1)" in page.locator("#doc-dropped").inner_text()
        assert invented not in page.locator("#doc-text").inner_text()
        assert page.locator("#doc-totals").inner_text().count("Dropped, not in the text") == 1
