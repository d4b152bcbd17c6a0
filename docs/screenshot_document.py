"""Re-make docs/img/document-view.png: the web UI's annotated document, on a scripted model.

Run from the repository root: python docs/screenshot_document.py  (needs Debian's chromium
and the dev extra). The model and the evidence are scripted, so the picture shows the UI
(each claim marked in place by its verdict, one claim opened), not a real check.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "integration"), str(ROOT / "tests")]

from PIL import Image  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from server_support import live_server  # noqa: E402

from veracity.core import registry  # noqa: E402
from veracity.core.config import RunConfig  # noqa: E402
from veracity.core.types import Document  # noqa: E402
from veracity.llm.base import LLMRequest  # noqa: E402
from veracity.testing import InMemorySource, ScriptedLLM  # noqa: E402

TEXT = (
    "Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891 to study at the "
    "Sorbonne. Curie won three Nobel Prizes, in physics and chemistry. Her laboratory "
    "notebooks are still too radioactive to handle. She is the most inspiring scientist "
    "who ever lived."
)
PASSAGES = [
    Document(id="p1", title="Marie Curie", url="https://en.wikipedia.org/wiki/Marie_Curie",
             text="Maria Skłodowska was born in Warsaw on 7 November 1867. In 1891 she moved "
             "to Paris and enrolled at the University of Paris (the Sorbonne).",
             source="encyclopedia"),
    Document(id="p2", title="Nobel Prize facts", url="https://www.nobelprize.org/curie",
             text="Marie Curie was awarded the Nobel Prize in Physics in 1903 and the Nobel "
             "Prize in Chemistry in 1911: two prizes in all.", source="encyclopedia"),
]  # fmt: skip
VERDICTS = {  # by a word of the claim: (label, reasoning)
    "Warsaw": ("SUPPORTED", "The encyclopedia gives Warsaw and 1867."),
    "Sorbonne": ("SUPPORTED", "She moved to Paris in 1891 and enrolled at the Sorbonne."),
    "Nobel": ("REFUTED", "She won two Nobel Prizes (1903 and 1911), not three."),
    "notebooks": ("NEI", "The passages say nothing about her notebooks."),
}
SELF_CONTAINED = {"She moved": "Marie Curie moved", "Her laboratory": "Marie Curie's laboratory"}


def _fenced(request: LLMRequest, tag: str) -> list[str]:
    prompt = "\n".join(str(m.content) for m in request.messages if m.role == "user")
    return [t.strip() for t in re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", prompt, re.S)]


def _standalone(request: LLMRequest) -> str:
    claims = _fenced(request, "claim")
    for old, new in SELF_CONTAINED.items():
        claims = [c.replace(old, new) for c in claims]
    return json.dumps({"claims": claims})


def _verdict(request: LLMRequest) -> str:
    claim = " ".join(_fenced(request, "input"))
    label, why = next(
        ((lab, why) for word, (lab, why) in VERDICTS.items() if word in claim), ("NEI", "")
    )
    return json.dumps({"reasoning": why, "cited": [1], "label": label})


def scripted() -> ScriptedLLM:
    llm = ScriptedLLM()
    first = lambda r: json.dumps({"claims": _fenced(r, "sentence")[:1]})  # noqa: E731
    llm.on(".*", first, tag="claims:decompose")
    llm.on(".*", _standalone, tag="claims:decontextualise")
    kinds = ["factual", "factual", "factual", "factual", "opinion"]
    llm.on(".*", json.dumps({"claims": kinds}), tag="claims:checkworthy")
    llm.on(".*", _verdict, tag="rag")
    fix = {"correction": "Marie Curie won two Nobel Prizes, in 1903 and 1911.", "evidence": [1]}
    llm.on(".*", json.dumps(fix), tag="correct")
    return llm


def main() -> None:
    if "curie" not in registry.sources:
        registry.sources.register("curie", lambda: InMemorySource(PASSAGES, name="curie"))
    config = RunConfig(
        method="rag", labels="supported_refuted_nei", sources={"curie": {"type": "curie"}},
        method_config={"reasoning": True},
    )  # fmt: skip
    out = ROOT / "docs" / "img" / "document-view.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    data = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/veracity-shot-document")
    with live_server(data, scripted(), config=config) as (server, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page(viewport={"width": 820, "height": 1200})
        page.goto(server.url + "/")
        page.get_by_label("Document (each of its claims)").check()
        page.get_by_label("Document text").fill(TEXT)
        page.get_by_label("Document name (optional)").fill("A chatbot's answer about Marie Curie")
        page.get_by_label("Method").select_option("rag")
        page.get_by_label("Labels").select_option("supported_refuted_nei")
        page.get_by_label("Suggest a correction for each refuted claim").check()
        page.get_by_role("button", name="Check").click()
        page.locator("#document[data-done=yes]").wait_for()
        page.locator("#doc-text mark.v-refuted").click()
        page.locator("#claim-c3 .claim-method p").first.wait_for()
        page.locator("#document").screenshot(path=str(out))
        browser.close()
    image = Image.open(out).convert("RGB").quantize(colors=128)
    image.save(out, optimize=True)
    print(f"wrote {out} ({out.stat().st_size // 1024} KB)")


if __name__ == "__main__":
    main()
