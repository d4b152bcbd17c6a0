"""Checking a whole document through the service (`Veracity.check` of a document: the same
road as every input), the Python API (`veracity.check` / `veracity.check_document`) and
`veracity check --kind document`: one run per document, the same rules as every check, the
claims shown in place."""

from __future__ import annotations

import json
import re

import httpx
import pytest
import respx
from typer.testing import CliRunner

import veracity
from veracity.cli import app
from veracity.core.config import RunConfig
from veracity.core.errors import ConfigError, InputError
from veracity.core.types import Document
from veracity.llm.client import ManagedLLM
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime import documents as runtime_documents
from veracity.runtime import rules
from veracity.runtime.home import home_paths, user_http_client
from veracity.runtime.service import CheckRefused, Veracity
from veracity.testing import ScriptedLLM
from veracity.testing.sources import table_resolver

TEXT = (
    "Marie Curie was born in Warsaw in 1867. She won three Nobel Prizes. "
    "I love her story [bold red]really[/]."
)
PASSAGES = [
    Document(id="p1", title="Marie Curie", text="Marie Curie was born in Warsaw in 1867."),
    Document(id="p2", title="Nobel Prizes", text="Curie won two Nobel Prizes, in 1903 and 1911."),
]
SOURCES = {"corpus": {"type": "local", "index": "curie", "mode": "bm25"}}
NO_SPLIT = {"decompose": False, "decontextualise": False}
PUBLIC = "93.184.216.34"
CORRECTED = "She won two Nobel Prizes."


@pytest.fixture
def corpus():
    build_local_corpus("curie", PASSAGES, mode="bm25", indexes_dir=home_paths().indexes)


def scripted() -> ScriptedLLM:
    """rag answers by the claim it is shown; the checkworthiness step by position."""
    llm = ScriptedLLM()
    llm.on(
        ".*", json.dumps({"claims": ["factual", "factual", "opinion"]}), tag="claims:checkworthy"
    )
    llm.on("three Nobel", '{"cited": [1], "label": "false"}', tag="rag")
    llm.on(".*", '{"cited": [1], "label": "true"}', tag="rag")
    llm.on(".*", json.dumps({"correction": CORRECTED, "evidence": [1]}), tag="correct")
    return llm


def config() -> RunConfig:
    return RunConfig(sources=SOURCES)


async def test_a_document_is_checked_claim_by_claim_with_one_run(corpus, builds):
    llm = scripted()
    async with Veracity(config(), llm=llm) as veracity_:
        verdict = await veracity_.check(TEXT, kind="document", extraction=NO_SPLIT, concurrency=2)
    report = verdict.report
    assert len(builds) == 1  # the claim method is built once for the whole document
    assert report.method == runtime_documents.DEFAULT_DOCUMENT_METHOD == "rag"
    by_text = {o.claim.text: o for o in report.claims}
    born = by_text["Marie Curie was born in Warsaw in 1867."]
    nobel = by_text["She won three Nobel Prizes."]
    assert (born.status, born.support, nobel.support) == ("checked", "supported", "refuted")
    start, end = nobel.claim.spans[0]
    assert TEXT[start:end] == "She won three Nobel Prizes."
    assert nobel.verdict.evidence, "rag cited no passage of the local corpus"
    opinion = by_text["I love her story [bold red]really[/]."]
    assert opinion.status == "not_checkworthy" and opinion.verdict is None
    assert (report.summary.checked, report.summary.factuality) == (2, 0.5)
    rag_calls = [r for r in llm.calls if r.tag == "rag"]
    assert len(rag_calls) == 2  # the opinion was never sent to the method


@pytest.mark.parametrize(
    ("choices", "title"),
    [
        ({"method": "nope"}, rules.UNKNOWN_METHOD),
        ({"method": "s2mad"}, rules.KIND_REFUSED),
        ({"labels": "no_such_space"}, rules.UNKNOWN_LABELS),
        ({"extraction": {"max_sentences": 0}}, runtime_documents.EXTRACTION_REFUSED),
        ({"extraction": {"sentences": 3}}, runtime_documents.EXTRACTION_REFUSED),
        ({"concurrency": 0}, runtime_documents.CONCURRENCY_REFUSED),
        ({"model": "other-model"}, rules.MODEL_NOT_ALLOWED),
    ],
)
def test_a_refused_document_check_builds_nothing(builds, choices, title):
    with Veracity(config(), llm=scripted()) as veracity_, pytest.raises(CheckRefused) as caught:
        veracity_.plan(TEXT, kind="document", **choices)
    assert caught.value.title == title
    assert builds == []


def test_a_method_that_checks_no_claims_says_to_pick_a_claim_method():
    veracity_ = Veracity(config(), llm=scripted())
    with pytest.raises(CheckRefused, match="pick a claim method"):
        veracity_.plan(TEXT, kind="document", method="s2mad")


@pytest.mark.parametrize(
    ("document", "url", "match"),
    [
        (None, None, "give a document"),
        (TEXT, "https://news.example/a", "give a document"),
        ("   \n ", None, "empty"),
    ],
)
def test_no_document_or_two_are_input_errors(builds, document, url, match):
    veracity_ = Veracity(config(), llm=scripted())
    with pytest.raises(InputError, match=match):
        veracity_.plan(document, kind="document", url=url)
    assert builds == []


async def test_a_url_is_fetched_through_the_guarded_client(corpus):
    page = (
        "<html><head><title>Curie facts</title></head><body><article><p>"
        + TEXT.replace("[bold red]really[/]", "a lot")
        + "</p></article></body></html>"
    )
    user_http_client().resolver = table_resolver({"news.example": [PUBLIC]})
    with respx.mock(assert_all_called=True) as router:
        router.get(f"https://{PUBLIC}/curie", headers={"host": "news.example"}).mock(
            return_value=httpx.Response(200, text=page, headers={"content-type": "text/html"})
        )
        async with Veracity(config(), llm=scripted()) as veracity_:
            verdict = await veracity_.check(
                None, url="https://news.example/curie", extraction=NO_SPLIT
            )
    report = verdict.report
    assert report.document.origin == "url"
    assert report.document.url == "https://news.example/curie"
    assert "Nobel" in report.document.text
    assert report.summary.refuted == 1


async def test_a_private_url_is_refused_before_any_fetch(corpus):
    user_http_client().resolver = table_resolver({"intranet.example": ["10.0.0.7"]})
    with respx.mock(assert_all_called=False) as router:
        route = router.get(url__regex=r".*").mock(return_value=httpx.Response(200))
        async with Veracity(config(), llm=scripted()) as veracity_:
            with pytest.raises(InputError, match=r"intranet\.example"):
                await veracity_.check(None, url="http://intranet.example/")
    assert not route.called


def test_the_python_api_checks_a_document_file(corpus, tmp_path):
    path = tmp_path / "curie.md"
    path.write_text(TEXT, encoding="utf-8")
    report = veracity.check_document(
        path, llm=scripted(), sources=SOURCES, extraction=NO_SPLIT, corrections=True
    )
    assert report.document.origin == "file" and report.document.format == "markdown"
    assert [o.status for o in report.claims] == ["checked", "checked", "not_checkworthy"]
    assert report.claims[1].correction.text == CORRECTED
    assert report.claims[0].correction is None  # only refuted claims get one
    assert "check_document" in veracity.__all__ and "acheck_document" in dir(veracity)


def test_the_python_api_refuses_a_post_method():
    with pytest.raises(CheckRefused, match="s2mad"):
        veracity.check_document(TEXT, "s2mad", llm=scripted())


# ---------------------------------------------------------------------- the command line

RESOLVED = {"She won three Nobel Prizes.": "Marie Curie won three Nobel Prizes."}


def _sentence(request) -> str:
    prompt = request.messages[-1].content
    return re.search(r"<sentence>\n(.*?)\n</sentence>", prompt, re.S).group(1)


def _window(request) -> str:
    """A window of numbered sentences: one claim each, "She" resolved, the categories by
    position as `scripted`'s check-worthiness step gives them."""
    prompt = request.messages[-1].content
    sentences = re.findall(r'<sentence id="\d+">\n(.*?)\n</sentence>', prompt, re.S)
    kinds = ("factual", "factual", "opinion")
    return json.dumps({"claims": [
        {"sentences": [k], "text": RESOLVED.get(s, s), "category": kinds[k - 1]}
        for k, s in enumerate(sentences, 1)
    ]})  # fmt: skip


def full_pipeline() -> ScriptedLLM:
    """`scripted`, with the extraction's window call (one claim per sentence, "She"
    resolved), and the decomposition and rewrite of sentence mode, answered too (the
    command line runs every extraction step)."""
    llm = ScriptedLLM()
    llm.on(".*", _window, tag="claims:window")
    llm.on(".*", lambda r: json.dumps({"claims": [_sentence(r)]}), tag="claims:decompose")
    llm.on(
        ".*",
        lambda r: json.dumps({"claims": [RESOLVED.get(_sentence(r), _sentence(r))]}),
        tag="claims:decontextualise",
    )
    for rule in scripted()._rules:
        llm._rules.append(rule)
    return llm


@pytest.fixture
def cli(monkeypatch, corpus):
    """`veracity check` with the scripted model and the local corpus as its source."""
    monkeypatch.setattr(
        "veracity.llm.factory.build_llm", lambda *a, **kw: ManagedLLM(full_pipeline())
    )
    monkeypatch.setattr("veracity.cli.common.ensure_model", lambda cfg: None)

    def invoke(*args: str, stdin: str | None = None):
        argv = ["check", "--source", "corpus=local:curie", *args]
        return CliRunner().invoke(app, argv, input=stdin, env={"COLUMNS": "300"})

    return invoke


def test_the_command_prints_the_document_marked_then_the_claims(cli):
    result = cli("--kind", "document", "--corrections", TEXT)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "She won three Nobel Prizes.⟨c2⟩" in out  # the claim's span, marked in place
    assert "I love her story [bold red]really[/].⟨c3⟩" in out  # markup printed as text
    assert "Marie Curie won three Nobel Prizes." in out  # the claim as checked
    assert "not checked (opinion)" in out
    assert "suggested correction (evidence 1): She won two Nobel Prizes." in out
    assert "factuality 50% of 2 check-worthy (FActScore" in out
    assert "50% of the 2 with a label) (method rag" in out


def test_the_command_reads_a_file_and_standard_input(cli, tmp_path):
    page = tmp_path / "curie.html"
    page.write_text(f"<html><body><article><p>{TEXT}</p></article></body></html>", encoding="utf-8")
    from_file = cli("--kind", "document", "--file", str(page), "--json")
    from_stdin = cli("--kind", "document", "-", "--json", stdin=TEXT)
    for result, origin in ((from_file, "file"), (from_stdin, "stdin")):
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["document"]["origin"] == origin
        nobel = report["claims"][1]
        assert nobel["claim"]["text"] == "Marie Curie won three Nobel Prizes."
        start, end = nobel["claim"]["spans"][0]
        assert report["document"]["text"][start:end] == "She won three Nobel Prizes."
        assert nobel["support"] == "refuted" and report["summary"]["factuality"] == 0.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--kind", "document"), "nothing to check"),
        (("--kind", "document", "   "), "empty"),
        (("--url", "https://a.example/", "some text"), "give only one document"),
        (("--url", "ftp://a.example/x"), "http:// or https://"),
        (("--kind", "document", "--method", "s2mad", TEXT), "pick a claim method"),
        (("--kind", "document", "--file", "missing.txt"), "missing.txt"),
        (("--kind", "document", "--file", "notes.docx"), "unknown file type"),
        (("--corrections", TEXT), "--corrections applies to documents"),
        (("--kind", "poem", TEXT), "use one of claim, article, post, document"),
    ],
)
def test_bad_document_input_is_a_clear_message_and_exit_2(
    cli, tmp_path, monkeypatch, args, message
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.docx").write_bytes(b"PK")
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output


# ---------------------------------------------------------------------- MCP


async def test_the_mcp_tool_checks_a_document_for_an_sdk_client(corpus):
    from mcp import Client

    from veracity.mcp.server import build_server

    llm = full_pipeline()
    server = build_server(RunConfig(sources=SOURCES), llm=llm)
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "check_document" in names
        progress: list[str] = []

        async def on_progress(done, total, message):
            progress.append(message)

        result = await client.call_tool(
            "check_document", {"text": TEXT, "corrections": True}, progress_callback=on_progress
        )
        assert not result.is_error, result.content
        found = result.structured_content
        nobel = found["claims"][1]
        assert nobel["text"] == "Marie Curie won three Nobel Prizes."
        start, end = nobel["spans"][0]
        assert found["text"][start:end] == "She won three Nobel Prizes."
        assert (nobel["support"], nobel["correction"]) == ("refuted", CORRECTED)
        assert nobel["evidence"][0]["title"] == "Nobel Prizes"
        assert found["claims"][2]["status"] == "not_checkworthy"
        assert found["summary"]["factuality"] == 0.5 and found["method"] == "rag"
        assert progress, "no progress notification while the document was checked"
        # refusals are tool errors and the server keeps serving
        post_only = await client.call_tool("check_document", {"text": TEXT, "method": "s2mad"})
        assert post_only.is_error and "pick a claim method" in post_only.content[0].text
        neither = await client.call_tool("check_document", {})
        assert neither.is_error and "give a document" in neither.content[0].text
        private = await client.call_tool("check_document", {"url": "http://127.0.0.1/x"})
        assert private.is_error and "127.0.0.1" in private.content[0].text
        # extraction settings reach the stage: no decomposition call; bad ones are refused
        asked = len(llm.calls_tagged("claims:window"))
        whole = await client.call_tool(
            "check_document", {"text": TEXT, "extraction": {"decompose": False}}
        )
        assert not whole.is_error, whole.content
        assert len(llm.calls_tagged("claims:window")) == asked > 0
        assert len(whole.structured_content["claims"]) == 3
        bad = await client.call_tool(
            "check_document", {"text": TEXT, "extraction": {"max_sentences": 0}}
        )
        assert bad.is_error and "max_sentences" in bad.content[0].text


def test_the_command_checks_a_web_page(cli):
    page = f"<html><head><title>Curie facts</title></head><body><article><p>{TEXT}</p></article>"
    user_http_client().resolver = table_resolver({"news.example": [PUBLIC]})
    with respx.mock(assert_all_called=True) as router:
        router.get(f"https://{PUBLIC}/curie", headers={"host": "news.example"}).mock(
            return_value=httpx.Response(200, text=page, headers={"content-type": "text/html"})
        )
        result = cli("--url", "https://news.example/curie")
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "https://news.example/curie" in out
    assert "She won three Nobel Prizes.⟨c2⟩" in out
    assert "factuality 50%" in out


# ------------------------------------------------------------- prompt overrides


CHECKWORTHY_OVERRIDE = """<|system|>
HOUSE RULES: sort each claim into factual, opinion, advice, question or trivial.
<|user|>
{{ text | data("text") }}
{% for c in claims %}
{{ c | data("claim", loop.index) }}
{% endfor %}
One category per claim, in order, in "claims".
"""


async def test_the_claim_extraction_prompts_are_overridden_from_the_run_config(corpus, tmp_path):
    template = tmp_path / "checkworthy.j2"
    template.write_text(CHECKWORTHY_OVERRIDE, encoding="utf-8")
    cfg = RunConfig(sources=SOURCES, prompts={"claims": {"claims_checkworthy.j2": str(template)}})
    llm = scripted()
    async with Veracity(cfg, llm=llm) as veracity_:
        plan = veracity_.plan(TEXT, kind="document", extraction=NO_SPLIT)
        report = (await plan.check()).report
    sorting = [r for r in llm.calls if r.tag == "claims:checkworthy"]
    assert sorting and "HOUSE RULES" in sorting[0].messages[0].content
    assert "Marie Curie" in sorting[0].messages[1].content  # the fenced text still reaches it
    assert report.summary.checked == 2
    assert "claims/claims_checkworthy.j2" in plan.run.method.prompt_hashes()
    # the method's own prompts stay as shipped: rag's calls never see the override
    assert all(
        "HOUSE RULES" not in m.content for r in llm.calls if r.tag == "rag" for m in r.messages
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("claims_nope.j2", "x", "has no such template"),
        ("claims_checkworthy.j2", "{{ text }}", "without a fence"),
        ("claims_checkworthy.j2", '{{ secret | data("s") }}', "does not pass"),
    ],
)
def test_a_bad_claim_prompt_override_is_refused_when_the_run_is_built(
    corpus, tmp_path, name, text, message
):
    template = tmp_path / "t.j2"
    template.write_text(text, encoding="utf-8")
    cfg = RunConfig(sources=SOURCES, prompts={"claims": {name: str(template)}})
    with Veracity(cfg, llm=scripted()) as veracity_, pytest.raises(ConfigError) as caught:
        veracity_.plan(TEXT, kind="document")
    assert message in str(caught.value)
