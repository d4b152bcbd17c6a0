"""The web UI in real headless Chromium (Debian's, driven by Playwright; no browser
download), against a live server on a scripted model. Screenshots are kept under the
test run's temporary directory (or $VERACITY_TEST_ARTIFACTS)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from server_support import (
    CLAIM,
    POST,
    QUOTE,
    THREAD,
    cot_llm,
    live_server,
    radar_llm,
    run_config,
    s2mad_llm,
)

from browser_support import TIMEOUT_MS, chromium

pytestmark = [pytest.mark.browser, pytest.mark.server]

browser = pytest.fixture(scope="module")(chromium)  # one Chromium per module


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
    yield pg
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


def test_submit_a_claim_watch_progress_and_read_verdict_evidence_and_debate(tmp_path, page, shots):
    with live_server(tmp_path, radar_llm(latency_s=0.05), config=run_config("radar")) as (
        server,
        _,
    ):
        page.goto(server.url + "/")
        page.get_by_label("Claim to check").fill(CLAIM)
        page.get_by_label("Method").select_option("radar")
        page.get_by_role("button", name="Check").click()
        page.wait_for_url("**/checks/*")
        progress = page.locator("#progress li")
        progress.filter(has_text="Searched memory").first.wait_for()
        progress.filter(has_text="politician").first.wait_for()
        page.locator("#verdict-label").wait_for()
        page.screenshot(path=str(shots / "claim-verdict.png"), full_page=True)
        assert page.locator("#status").inner_text().startswith("done")
        assert page.locator("#verdict-label").inner_text() == "TRUE"
        assert page.locator("#evidence li").count() == 4
        assert "Auction report" in page.locator("#evidence").inner_text()
        debate = page.locator("#debate")
        assert "Round 1" in debate.inner_text() and "Round 2" in debate.inner_text()
        assert debate.locator("h3", has_text="politician").count() >= 1
        assert debate.locator("h3", has_text="scientist").count() >= 1
        assert page.locator("#stop-signals tbody tr").count() >= 2
        assert "4 results" in page.locator("#progress").inner_text()
        counters = page.locator("#counters").inner_text()
        assert "model call" in counters
        # counts agree with their number ("0 searchs" was shown): 1 search, 2 searches
        assert "searchs" not in counters
        assert re.search(r"(^|\D)(1 search|\d+ searches)\b", counters), counters
        assert page.evaluate("plural(0, 'search') + '|' + plural(1, 'search')") == (
            "0 searches|1 search"
        )
        assert page.locator("#usage").inner_text().count("Model calls") == 1
        # the permalink shows the same check to a new visitor, replayed
        url = page.url
        page.goto(url)
        page.locator("#verdict-label").wait_for()
        assert page.locator("#progress li").count() >= 4
        # history lists it with a link back
        page.goto(server.url + "/history")
        link = page.locator("#history a").first
        link.wait_for()
        assert CLAIM[:40] in link.inner_text()
        link.click()
        page.wait_for_url(url)
        # JSON download of the verdict
        page.locator("#verdict-label").wait_for()
        with page.expect_download() as info:
            page.get_by_role("button", name="Download JSON").click()
        saved = tmp_path / "verdict.json"
        info.value.save_as(saved)
        import json

        assert json.loads(saved.read_text())["verdict"]["label"] == "TRUE"


def test_a_post_with_replies_one_per_line_shows_stance_groups(tmp_path, page, shots):
    with live_server(tmp_path, s2mad_llm(), config=run_config("s2mad")) as (server, _):
        page.goto(server.url + "/")
        page.get_by_label("Post with replies").check()
        page.get_by_label("Post text").fill(POST)
        page.get_by_label("Replies", exact=True).fill("\n".join(THREAD))
        assert page.get_by_label("Method").input_value() == "s2mad"
        page.get_by_role("button", name="Check").click()
        page.wait_for_url("**/checks/*")
        page.locator("#verdict-label").wait_for()
        page.screenshot(path=str(shots / "post-stance.png"), full_page=True)
        assert page.locator("#verdict-label").inner_text() == "rumor"
        groups = page.locator("#stance-groups").inner_text()
        assert "Supporting (2)" in groups and "Opposing (2)" in groups
        assert "This photo is from a drill last year." in groups
        assert "agent_p" in page.locator("#debate").inner_text()


def test_an_article_with_title_address_and_date(tmp_path, page):
    with live_server(tmp_path, cot_llm()) as (server, client):
        page.goto(server.url + "/")
        page.get_by_label("Article").check()
        page.get_by_label("Title").fill("Tower moves east")
        page.get_by_label("Body").fill("The Eiffel Tower was moved to Berlin last week.")
        page.get_by_label("Address (URL)").fill("https://news.example/tower")
        page.get_by_label("Published on").fill("2024-04-01")
        page.get_by_role("button", name="Check").click()
        page.locator("#verdict-label").wait_for()
        job_id = page.url.rsplit("/", 1)[-1]
        sent = client.get(f"/v1/checks/{job_id}").json()["request"]["input"]
    assert page.locator("#verdict-label").inner_text() == "false"
    assert sent["kind"] == "article" and sent["title"] == "Tower moves east"
    assert sent["url"] == "https://news.example/tower"
    assert sent["published_at"].startswith("2024-04-01T00:00:00")


def test_empty_input_shows_the_servers_error(tmp_path, page, shots):
    with live_server(tmp_path, cot_llm()) as (server, _):
        page.goto(server.url + "/")
        page.get_by_role("button", name="Check").click()
        error = page.locator("#form-error")
        error.wait_for(state="visible")
        page.screenshot(path=str(shots / "empty-input.png"))
        assert "empty" in error.inner_text()
        assert page.url == server.url + "/"
        page.get_by_label("Post with replies").check()
        page.get_by_label("Post text").fill("a post")
        page.get_by_label("Replies", exact=True).fill(
            '[{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]'
        )
        page.get_by_role("button", name="Check").click()
        # expect() polls the locator from Playwright's side: no script is evaluated in the
        # page, so the UI's Content-Security-Policy (no unsafe-eval) cannot refuse it.
        from playwright.sync_api import expect

        expect(error).to_contain_text("two", timeout=TIMEOUT_MS)


def test_a_new_methods_trajectory_tree_and_quote_appear_without_ui_changes(tmp_path, page, shots):
    with live_server(tmp_path, cot_llm(), config=run_config("showcase")) as (server, _):
        page.goto(server.url + "/")
        page.get_by_label("Claim to check").fill(CLAIM)
        page.get_by_role("button", name="Check").click()
        page.locator("#verdict-label").wait_for()
        assert page.locator("#evidence mark").inner_text() == QUOTE
        assert "Quote found" in page.locator("#evidence").inner_text()
        trajectory = page.locator("#trajectory").inner_text()
        assert "find the auction record" in trajectory and "search" in trajectory
        tree = page.locator("#tree")
        assert "He sold the medal" in tree.inner_text() and "resolved" in tree.inner_text()
        tree.locator("summary").first.click()  # collapse the root: the child hides
        assert not tree.get_by_text("He sold the medal").is_visible()
        tree.locator("summary").first.press("Enter")  # and the keyboard opens it again
        assert tree.get_by_text("He sold the medal").is_visible()
        assert "Argument" in page.locator("#progress").inner_text()
        page.screenshot(path=str(shots / "plugin-method.png"), full_page=True)


def test_the_ui_asks_for_the_token_once(tmp_path, browser, shots):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    with live_server(tmp_path, cot_llm(), token="let-me-in") as (server, _):
        page.goto(server.url + "/")
        dialog = page.get_by_role("dialog")
        dialog.wait_for()
        page.get_by_label("Token", exact=True).fill("let-me-in")
        page.get_by_role("button", name="Use token").click()
        page.get_by_label("Claim to check").fill("The Eiffel Tower is in Berlin.")
        page.get_by_role("button", name="Check").click()
        page.locator("#verdict-label").wait_for()
        assert page.locator("#verdict-label").inner_text() == "false"
        page.goto(server.url + "/history")  # same tab: no second prompt
        page.locator("#history a").first.wait_for()
        assert not page.get_by_role("dialog").is_visible()
    context.close()


def test_readable_on_a_phone_and_usable_by_keyboard(tmp_path, browser, shots):
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    with live_server(tmp_path, radar_llm(), config=run_config("radar")) as (server, _):
        page.goto(server.url + "/")
        page.keyboard.press("Tab")  # the skip link comes first
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
        page.get_by_label("Claim to check").fill(CLAIM)
        page.get_by_label("Method").select_option("radar")
        page.get_by_label("Method").focus()
        for _ in range(5):  # past the label space and the sources, to the Check button
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.textContent") == "Check":
                break
        assert page.evaluate("document.activeElement.id") == "submit"
        page.keyboard.press("Enter")
        page.locator("#verdict-label").wait_for()
        width = page.evaluate("document.documentElement.scrollWidth")
        page.screenshot(path=str(shots / "phone.png"), full_page=True)
        assert width <= 375, f"the page scrolls sideways on a phone ({width}px)"
        unlabeled = page.evaluate(
            """() => [...document.querySelectorAll('input, select, textarea')]
                 .filter(e => !e.labels || e.labels.length === 0).map(e => e.id)"""
        )
        assert unlabeled == []
    context.close()
