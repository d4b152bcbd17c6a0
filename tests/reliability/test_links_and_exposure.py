"""Links and exposure (issue 23, item 7): only absolute http(s) addresses become links in
the web UI (pages rendered in Python, and again in the UI's script) and in `veracity
report`'s HTML; every other address is shown as text. On a server with a token, no page
or probe that answers without it shows the configuration (methods, models, sources) or
anything else the API keeps behind the token.

Real components throughout: a server on 127.0.0.1, the `veracity` command in a
subprocess, and Debian's Chromium driven by Playwright for what a browser makes of it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path

import pytest

from browser_support import CHROMIUM, chromium
from veracity.core import registry
from veracity.core.config import RunConfig
from veracity.core.types import Evidence
from veracity.core.weblinks import web_link
from veracity.methods.base import BaseMethod
from veracity.testing import InMemorySource, ScriptedLLM

from .conftest import run_cli, write_liar

httpx = pytest.importorskip("httpx")
server_mod = pytest.importorskip("veracity.server")

pytestmark = [pytest.mark.server]

TOKEN = "t0ken-for-links-test"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SOURCE_NAME, MODEL_NAME, OTHER_MODEL = "newsroom-archive-7", "scripted-secret-model", "alt-m-9"

# (address, whether it may be a link). The unsafe ones: script, inline content, local
# files, no host, a relative address, characters browsers read differently from us.
ADDRESSES = [
    ("javascript:alert(1)", False),
    ("JaVaScRiPt:alert(document.cookie)", False),
    ("  javascript:alert(1)", False),
    ("\tjava\nscript:alert(1)", False),
    ("data:text/html,<script>alert(1)</script>", False),
    ("vbscript:msgbox(1)", False),
    ("file:///etc/passwd", False),
    ("//evil.example/x", False),
    ("https:evil.example", False),
    ("https://", False),
    ("http://exa mple.com/", False),
    ("http://a\x00b.example/", False),
    ("https://ok.example\\@evil.example/", False),
    ("https://bidi\u202eelpmaxe.example/", False),
    ("http://port.example:99999/", False),
    ("https://ok.example/a?b=1&c=2", True),
    ("HTTP://UPPER.EXAMPLE/", True),
    (" https://padded.example/x ", True),
]

browser = pytest.fixture(scope="module")(chromium)  # one Chromium per module


class _Anchors(HTMLParser):
    """Every ``<a href>`` of a page, and the text inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._open: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href is not None:
            self.links.append((href, ""))
            self._open = [href]

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            href, text = self.links[-1]
            self.links[-1] = (href, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._open = None


def anchors(html: str) -> dict[str, str]:
    """{link text: href} of a page."""
    parser = _Anchors()
    parser.feed(html)
    return {text.strip(): href for href, text in parser.links}


class CiteGiven(BaseMethod):
    """Cites the evidence handed over with the claim, as it came."""

    name = "cite_given"
    input_kinds = ("claim",)
    description = "test method: cites the given evidence"

    async def run(self, item, ctx):
        cited = [Evidence(document=d) for d in item.evidence]
        return self.verdict(label="true", score=0.9, confidence=0.9, rationale="r", evidence=cited)


if "cite_given" not in registry.methods:
    registry.methods.register("cite_given", CiteGiven)
if "links_memory" not in registry.sources:
    registry.sources.register("links_memory", lambda name="m": InMemorySource([], name=name))


@contextmanager
def live(tmp_path: Path, **settings) -> Iterator[tuple[str, httpx.Client, object]]:
    """A server on 127.0.0.1 with a source and a model of telling names; (url, client, app)."""
    llm = ScriptedLLM(default='{"reasoning": "r", "label": "false"}')
    llm.model = MODEL_NAME
    config = RunConfig(method="cot", sources={SOURCE_NAME: {"type": "links_memory"}})
    opts = {"rate_per_minute": 0, "data_dir": tmp_path / "server", **settings}
    app = server_mod.create_app(server_mod.ServerSettings(**opts), run_config=config, llm=llm)
    with (
        server_mod.BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        yield server.url, client, app


def finished(client: httpx.Client, job_id: str, headers: dict | None = None) -> dict:
    for _ in range(600):
        job = client.get(f"/v1/checks/{job_id}?trace=false", headers=headers).json()
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")


def cite(client: httpx.Client, headers: dict | None = None) -> str:
    docs = [
        {"id": f"d{i}", "title": f"Doc {i}", "text": "passage", "url": url}
        for i, (url, _) in enumerate(ADDRESSES)
    ]
    body = {"input": {"kind": "claim", "text": "A claim.", "evidence": docs}}
    resp = client.post("/v1/checks", json={**body, "method": "cite_given"}, headers=headers)
    assert resp.status_code == 202, resp.text
    job_id = resp.json()["id"]
    assert finished(client, job_id, headers)["status"] == "done"
    return job_id


# --------------------------------------------------------------------------- the rule


def test_the_shared_rule_links_absolute_web_addresses_only():
    for url, linkable in ADDRESSES:
        assert (web_link(url) is not None) is linkable, url
    assert web_link(" https://padded.example/x ") == "https://padded.example/x"
    assert web_link(None) is None and web_link(42) is None
    assert web_link("https://x.example/" + "a" * 5000) is None  # absurdly long: text


# --------------------------------------------------------------------------- the web UI


def test_evidence_and_article_addresses_in_the_ui_fragments(tmp_path, capsys):
    wrong: list[str] = []
    with live(tmp_path) as (_, client, _app):
        report = anchors(client.get(f"/ui/checks/{cite(client)}/report").text)
        for i, (url, linkable) in enumerate(ADDRESSES):
            href = report.get(f"Doc {i}")
            if (href is not None) is not linkable or (href and href != url.strip()):
                wrong.append(f"evidence {url!r}: href {href!r}")
        for url, linkable in ADDRESSES:
            body = {"kind": "article", "title": "Headline", "body": "Body.", "url": url}
            resp = client.post("/v1/checks", json={"input": body, "method": "cot"})
            assert resp.status_code == 202, resp.text
            shown = anchors(client.get(f"/ui/checks/{resp.json()['id']}/input").text)
            if ("Headline" in shown) is not linkable:
                wrong.append(f"article {url!r}: {shown}")
    with capsys.disabled():
        print(f"\nUI links: tried {2 * len(ADDRESSES)}, wrong {len(wrong)}")
    assert wrong == []


@pytest.fixture
def page(browser):
    context = browser.new_context()
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


def page_links(page) -> list[str]:
    """The resolved href of every link in the page, as the browser holds it."""
    return page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")


@pytest.mark.browser
def test_the_check_page_in_chromium_links_web_addresses_only(tmp_path, page):
    with live(tmp_path) as (url, client, _app):
        job_id = cite(client)
        page.goto(f"{url}/checks/{job_id}")
        page.locator("#evidence li").nth(len(ADDRESSES) - 1).wait_for()
        evidence = page.locator("#evidence")
        links = evidence.locator("a[href]")
        hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
        assert hrefs == [u.strip() for u, ok in ADDRESSES if ok]
        for i in range(len(ADDRESSES)):  # every title is shown, linked or not
            assert evidence.get_by_text(f"Doc {i}", exact=True).count() == 1
        assert all(h.startswith(("http://", "https://")) for h in page_links(page))


@pytest.mark.browser
def test_the_ui_script_unlinks_unsafe_addresses_in_any_fragment(tmp_path, page):
    """A fragment that does carry unsafe links (an older or a tampered server, a proxy):
    the script's own rule turns them into text and keeps web and same-site links."""
    planted = (
        '<section id="evidence"><a id="k1" href="https://ok.example/">web</a>'
        '<a id="k2" href="/history">own page</a><a id="k3" href="#evidence">anchor</a>'
        '<a id="u1" href="javascript:alert(1)">js</a><a id="u2" href=" JAVA&#9;SCRIPT:x">js2</a>'
        '<a id="u3" href="data:text/html,hi">data</a><a id="u4" href="vbscript:x">vb</a>'
        '<a id="u5" href="file:///etc/passwd">file</a><a id="u6" href="https:\\\\evil">bs</a>'
        '<a id="u7" href="http://a\u200bb.example/">zw</a><map><area id="u8" href="javascript:1">'
        "</map></section>"
    )
    with live(tmp_path) as (url, client, _app):
        job_id = cite(client)
        page.route("**/ui/checks/*/report", lambda route: route.fulfill(
            status=200, content_type="text/html", body=planted))  # fmt: skip
        page.goto(f"{url}/checks/{job_id}")
        page.locator("#k1").wait_for()
        kept = {i: page.locator(f"#{i}").get_attribute("href") for i in ("k1", "k2", "k3")}
        assert kept == {"k1": "https://ok.example/", "k2": "/history", "k3": "#evidence"}
        for i in range(1, 9):
            assert page.locator(f"#u{i}").count() == 0, f"u{i} is still a link"
        text = page.locator("#report").inner_text()
        assert all(word in text for word in ("js", "js2", "data", "vb", "file", "bs", "zw"))
        assert page.locator("#report span.unlinked").count() == 8  # 7 links and the area
        assert all(h.startswith(("http://", "https://")) for h in page_links(page))


# --------------------------------------------------------------------------- the report


def test_the_html_report_links_web_addresses_only(tmp_path, fake_server, browser):
    home, run = tmp_path / "home", tmp_path / "run"
    data = write_liar(tmp_path / "data", 4)
    ev = run_cli(["eval", "--method", "cot", "--dataset", "liar", "--split", "train",
                  "--data-dir", str(data), "--base-url", fake_server.url, "--model", "fake",
                  "--out", str(run), "--no-progress", "--limit", "2"], home)  # fmt: skip
    assert ev.returncode == 0, ev.stderr.decode()
    path = run / "predictions.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for k, record in enumerate(records):  # half the addresses on each example
        record["verdict"]["evidence"] = [
            {"document": {"id": f"d{i}", "title": f"Doc {i}", "text": "t", "url": url}}
            for i, (url, _) in enumerate(ADDRESSES)
            if i % 2 == k
        ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = run_cli(["report", str(run)], home)
    assert report.returncode == 0, report.stderr.decode()
    html = (run / "report.html").read_text()
    shown = anchors(html)
    for i, (url, linkable) in enumerate(ADDRESSES):
        assert f"Doc {i}" in html
        assert (f"Doc {i}" in shown) is linkable, (url, shown.get(f"Doc {i}"))
    if Path(CHROMIUM).exists():  # and as a browser reads the file
        page = browser.new_page()
        page.goto((run / "report.html").as_uri())
        hrefs = page_links(page)
        page.close()
        outside = [h for h in hrefs if not h.startswith((run / "report.html").as_uri())]
        assert sorted(outside) == sorted(u.strip().lower() for u, ok in ADDRESSES if ok)


# --------------------------------------------------------------------------- exposure

CONFIGURED = (SOURCE_NAME, MODEL_NAME, OTHER_MODEL, "links_memory")


def routes(app) -> list[tuple[str, str]]:
    """(method, path) of every route of `app`, read from the app itself (nested routers
    included, on FastAPI versions that nest them); a mount counts as a GET of its path."""
    import fastapi.routing

    walk = getattr(fastapi.routing, "iter_route_contexts", None)
    out = []
    for route in walk(app.routes) if walk else app.routes:
        methods = route.methods or {"GET"}
        out += [(m, route.path) for m in sorted(methods) if m != "HEAD"]
    return out


# What answers without the token: probes, the API's description, page shells (no data),
# static files, and a 404 for what does not exist.
EXPECTED_OPEN = [
    "GET /openapi.json", "GET /healthz", "GET /readyz", "GET /", "GET /checks/{job_id}",
    "GET /docs", "GET /history", "GET /static", "GET /static/app.js", "GET /static/app.css",
    "GET /nope",
]  # fmt: skip


def test_without_the_token_no_page_or_probe_shows_the_configuration(tmp_path, capsys):
    """Every route the app has is tried without the token: those that answer are the
    audited list, and none of them shows a configured name or a job's data."""
    settings = {"token": TOKEN, "allowed_models": [OTHER_MODEL]}
    with live(tmp_path, **settings) as (_, client, app):
        job_id = cite(client, AUTH)
        answered, leaks, tried = [], [], 0
        extra = [("GET", "/static/app.js"), ("GET", "/static/app.css"), ("GET", "/nope")]
        for method, path in [*routes(app), *extra]:
            tried += 1
            url = path.replace("{job_id}", job_id)
            resp = client.request(method, url)
            if resp.status_code != 401:
                answered.append(f"{method} {path}")
            found = [w for w in (*CONFIGURED, job_id) if w in resp.text and w not in url]
            leaks += [f"{method} {path}: {found}"] if found else []
        ready = client.get("/readyz")
        wrong = client.get("/readyz", headers={"Authorization": "Bearer nope"})
        full = client.get("/readyz", headers=AUTH)
        offer = client.get("/ui/offer", headers=AUTH)
    with capsys.disabled():
        print(f"\nroutes without the token: tried {tried}, answered {len(answered)}, "
              f"leaks {len(leaks)}")  # fmt: skip
    assert sorted(answered) == sorted(EXPECTED_OPEN), "a new open route: audit it here"
    assert leaks == []
    assert ready.status_code == 200 and ready.json() == {"ready": True, "detail": ""}
    assert wrong.json() == ready.json()
    assert full.json()["model"] == MODEL_NAME and full.json()["workers"] == 2
    assert SOURCE_NAME in offer.text and OTHER_MODEL in offer.text


class _Unloadable:
    """A backend whose weights fail to load, with a path in the error."""

    capabilities = ScriptedLLM().capabilities
    backend_id = "broken"
    model = MODEL_NAME

    def load(self):
        raise RuntimeError("weights missing at /srv/models/secret-model.gguf")

    async def complete(self, request):
        raise AssertionError("never called")


def test_readyz_without_the_token_says_not_ready_without_the_reason(tmp_path):
    config = RunConfig(method="cot")
    settings = server_mod.ServerSettings(data_dir=tmp_path, rate_per_minute=0, token=TOKEN)
    app = server_mod.create_app(settings, run_config=config, llm=_Unloadable())
    with (
        server_mod.BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        bare, full = client.get("/readyz"), client.get("/readyz", headers=AUTH)
    assert bare.status_code == full.status_code == 503
    assert set(bare.json()) == {"ready", "detail"} and bare.json()["ready"] is False
    assert "secret-model" not in bare.text and MODEL_NAME not in bare.text
    assert "secret-model.gguf" in full.json()["detail"]


def test_without_a_token_configured_readyz_tells_everything(tmp_path):
    with live(tmp_path) as (_, client, _app):
        ready = client.get("/readyz").json()
    assert ready["model"] == MODEL_NAME and ready["queue_size"] == 32


@pytest.mark.browser
def test_the_page_asks_for_the_token_before_it_shows_what_the_server_offers(tmp_path, page):
    with live(tmp_path, token=TOKEN, allowed_models=[OTHER_MODEL]) as (url, _, _app):
        page.goto(url + "/")
        page.get_by_role("dialog").wait_for()
        before = page.content()
        assert not any(w in before for w in CONFIGURED)
        assert page.locator("#method").count() == 0
        assert page.get_by_role("button", name="Check").is_disabled()
        page.get_by_label("Token", exact=True).fill(TOKEN)
        page.get_by_role("button", name="Use token").click()
        page.locator("#method").wait_for()
        assert SOURCE_NAME in page.locator("#offer").inner_text()
        assert page.get_by_label("Model").locator("option").all_inner_texts() == [
            MODEL_NAME,
            OTHER_MODEL,
        ]
        assert page.get_by_role("button", name="Check").is_enabled()


def test_the_check_page_of_an_unknown_or_real_job_says_nothing_without_the_token(tmp_path):
    with live(tmp_path, token=TOKEN) as (_, client, _app):
        job_id = cite(client, AUTH)
        real, unknown = client.get(f"/checks/{job_id}"), client.get("/checks/" + "0" * 32)
    # the page is the same shell for both: no way to tell which job exists
    assert real.status_code == unknown.status_code == 200
    shell = re.sub(job_id, "X", real.text).replace(job_id[:8], "Y")
    assert shell == re.sub("0" * 32, "X", unknown.text).replace("0" * 8, "Y")
    assert "Doc 0" not in real.text and "A claim." not in real.text
