"""The web UI reads as a person expects, in real headless Chromium (see
test_server_browser.py for the set-up): what was checked comes first on a check's page
and in the history, progress is told in sentences, an empty rationale is flagged, and
evidence shows its real source and, where known, its stance."""

from __future__ import annotations

import pytest
from server_support import CLAIM, POST, THREAD, cot_llm, live_server, run_config, s2mad_llm
from test_server_browser import browser, page, shots  # noqa: F401  (fixtures)

from veracity.core.config import RunConfig
from veracity.core.types import Document
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime.home import home_paths
from veracity.testing import ScriptedLLM

pytestmark = [pytest.mark.browser, pytest.mark.server]

TOWER = "The Eiffel Tower was moved to Berlin last week."
TOWER_DOCS = [
    Document(id=f"t{i}", title=f"Tower report {i}", text=f"The Eiffel Tower stands in Paris {i}.")
    for i in range(3)
]


def _submit_claim(pg, url: str, text: str) -> None:
    pg.goto(url + "/")
    pg.get_by_label("Claim to check").fill(text)
    pg.get_by_role("button", name="Check").click()
    pg.locator("#verdict-label").wait_for()


def test_a_claim_checked_on_the_default_local_corpus_reads_as_a_person_expects(
    tmp_path,
    page,  # noqa: F811
    shots,  # noqa: F811
):
    build_local_corpus(
        "default", TOWER_DOCS, mode="bm25", embedder="hashing:64", indexes_dir=home_paths().indexes
    )
    llm = ScriptedLLM(default='{"cited": [1], "label": "false"}')  # no reasoning asked for
    with live_server(tmp_path, llm, config=RunConfig(method="rag")) as (server, _):
        _submit_claim(page, server.url, TOWER)
        page.screenshot(path=str(shots / "readable-claim.png"), full_page=True)
        # what was checked comes first, before the status and the verdict
        assert page.locator("main h2").first.inner_text() == "Claim checked"
        assert page.locator("#checked-text").inner_text() == TOWER
        # progress in sentences: the setup note's text, the search with its real source
        progress = page.locator("#progress").inner_text()
        assert "Setup: no sources given and offline: rag searches the default local corpus" in (
            progress
        )
        assert f"Searched web (local) for “{TOWER}”: 3 results" in progress
        assert "{" not in progress and '"text"' not in progress  # no JSON
        # no rationale: said so, as a notice
        notice = page.locator("#no-rationale")
        assert notice.is_visible() and "No rationale given" in notice.inner_text()
        # the evidence names the corpus it came from, not the role "web"; no unknown stance
        assert page.locator("#evidence .ev-source").all_inner_texts() == ["local:default"]
        evidence = page.locator("#evidence").inner_text()
        assert "unknown" not in evidence and "cited" in evidence
        # the history lists the claim itself
        page.goto(server.url + "/history")
        link = page.locator("#history a").first
        link.wait_for()
        assert link.inner_text() == TOWER


def test_known_stance_is_shown_and_every_event_reads_as_a_sentence(
    tmp_path,
    page,  # noqa: F811
):
    with live_server(tmp_path, cot_llm(), config=run_config("showcase")) as (server, _):
        _submit_claim(page, server.url, CLAIM)
        badge = page.locator("#evidence .stance")
        assert badge.inner_text() == "supports" and "stance-supports" in badge.get_attribute(
            "class"
        )
        assert page.locator("#evidence .ev-source").inner_text() == "memory"
        progress = page.locator("#progress").inner_text()
        assert "Planner called search (q: Klitschko medal)" in progress
        assert "Evidence memory recall for Klitschko: 2 hits" in progress
        assert "{" not in progress
        page.locator("#all-events summary").first.click()
        assert (
            "Argument a1 (supported): He sold the medal" in page.locator("#all-events").inner_text()
        )


def test_an_article_shows_its_title_and_opening_first_and_in_the_history(
    tmp_path,
    page,  # noqa: F811
):
    body = "Officials in Paris confirmed on Monday that the tower has not moved. " * 12
    with live_server(tmp_path, cot_llm()) as (server, _):
        page.goto(server.url + "/")
        page.get_by_label("Article").check()
        page.get_by_label("Title").fill("Tower moves <east>")
        page.get_by_label("Body").fill(body)
        page.get_by_role("button", name="Check").click()
        page.locator("#verdict-label").wait_for()
        assert page.locator("main h2").first.inner_text() == "Article checked"
        assert page.locator("#checked-title").inner_text() == "Tower moves <east>"
        opening = page.locator("#checked-text").inner_text()
        assert opening.endswith("…") and len(opening) <= 301
        assert body.startswith(opening[:-1])
        assert "The opening of the article" in page.locator("#checked-input").inner_text()
        page.goto(server.url + "/history")
        row = page.locator("#history tbody tr").first
        row.wait_for()
        assert row.inner_text().startswith("Tower moves <east> — Officials in Paris")
        assert "(article)" in row.inner_text()


def test_a_post_shows_its_text_and_reply_count_first_and_in_the_history(
    tmp_path,
    page,  # noqa: F811
):
    with live_server(tmp_path, s2mad_llm(), config=run_config("s2mad")) as (server, _):
        page.goto(server.url + "/")
        page.get_by_label("Post with replies").check()
        page.get_by_label("Post text").fill(POST)
        page.get_by_label("Replies", exact=True).fill("\n".join(THREAD))
        page.get_by_role("button", name="Check").click()
        page.locator("#verdict-label").wait_for()
        assert page.locator("main h2").first.inner_text() == "Post checked"
        assert page.locator("#checked-text").inner_text() == POST
        assert page.locator("#checked-about").inner_text() == "4 replies"
        page.goto(server.url + "/history")
        row = page.locator("#history tbody tr").first
        row.wait_for()
        assert POST in row.inner_text() and "(post, 4 replies)" in row.inner_text()
