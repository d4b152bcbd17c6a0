"""Every method's prompts, pinned byte for byte (issue 39 item 4).

Each registered method — under each prompt layout where it has that option — checks one
example on the deterministic schema-filling model (`veracity.testing.schema`) with fixed
in-memory evidence. Every request's messages (role and content) are recorded; the sorted
list of requests (sorted, so concurrent calls cannot reorder it) is hashed. The hashes in
``tests/data/prompts_pinned.json`` were made on the code before the prompt-layout adapter:
a prompt that changes by one byte changes a hash, and recorded LLM caches would miss.

Regenerate (only when a prompt change is meant) from a checkout of the code to pin:

    PYTHONPATH=<checkout>/src python tests/unit/test_prompts_pinned.py --write
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

PINS = Path(__file__).resolve().parents[1] / "data" / "prompts_pinned.json"
LAYOUTS = ("shared", "paper")
EXCERPT = 4000  # characters of the first request kept for a readable failure


def _config(name: str) -> dict[str, Any]:
    """The offline settings `veracity.testing.injection.offline_method` uses."""
    if name in ("radar", "radar_single"):
        return {"source": "web"}
    if name in ("react", "fire"):
        return {"max_steps": 2}
    if name == "s2mad":
        return {"rounds": 1}
    if name in ("mermaid", "mermaid_single"):  # no tool-server process, no memory file
        return {"tool_transport": "inprocess", "memory": "off"}
    if name == "zofia":
        return {"max_rounds": 2}
    return {}


def layouts(name: str) -> tuple[str | None, ...]:
    """The layouts `name` can be run under (None: it has no layout option)."""
    from veracity.core.registry import methods

    fields = getattr(getattr(methods.get(name), "config_class", None), "model_fields", {})
    return LAYOUTS if "prompt_layout" in fields else (None,)


def build(name: str, llm: Any, docs: list[Any], layout: str | None) -> Any:
    """Method `name` on `llm` over in-memory `docs`, with the prompt layout `layout`."""
    from veracity.methods.base import load_method
    from veracity.testing.sources import InMemorySource

    config = _config(name)
    if layout is not None:
        config["prompt_layout"] = layout
    source = InMemorySource(docs, name="web")
    if name == "zofia":
        from veracity.methods.zofia import ZoFiaMethod
        from veracity.nlp.embeddings import HashingEmbedder
        from veracity.testing.encyclopedia import InMemoryEncyclopedia
        from veracity.testing.injection import _CapitalsNER

        return ZoFiaMethod(
            llm=llm, sources={"web": source}, embedder=HashingEmbedder(), ner=_CapitalsNER(),
            encyclopedia=InMemoryEncyclopedia([("Council", "a town council", "A council.")]),
            config=config,
        )  # fmt: skip
    return load_method(name, llm=llm, config=config, sources={"web": source})


async def record(name: str, layout: str | None) -> tuple[list[list[dict[str, str]]], str | None]:
    """The sorted requests (role and content of each message) of one check, and its
    verdict's error (a method the schema-filling model cannot satisfy still pins the
    prompts it sent)."""
    from veracity.llm.client import ManagedLLM
    from veracity.testing.injection import Recording, documents, make_input
    from veracity.testing.schema import schema_llm

    inner = Recording(schema_llm())
    method = build(name, ManagedLLM(inner), documents(0), layout)
    verdict = await method.check(make_input(name, 0, "claim", None))
    requests = [
        [{"role": str(m["role"]), "content": str(m["content"])} for m in r] for r in inner.requests
    ]
    requests.sort(key=lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False))
    return requests, verdict.error


def digest(requests: list[list[dict[str, str]]]) -> str:
    text = json.dumps(requests, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key(name: str, layout: str | None) -> str:
    return name if layout is None else f"{name}:{layout}"


def cases() -> list[tuple[str, str | None]]:
    from veracity.core.registry import methods

    # the installed methods (entry points): a test module's toy methods, registered at run
    # time when that module is imported into the same process, are not pinned
    return [(n, layout) for n in methods.entry_point_names() for layout in layouts(n)]


def flatten(request: list[dict[str, str]]) -> str:
    return "".join(f"<<{m['role']}>>\n{m['content']}\n" for m in request)


def generate() -> dict[str, Any]:
    pins: dict[str, Any] = {}
    for name, layout in cases():
        requests, error = asyncio.run(record(name, layout))
        pins[key(name, layout)] = {
            "sha256": digest(requests),
            "requests": len(requests),
            "digests": [digest([r]) for r in requests],
            "first": flatten(requests[0])[:EXCERPT] if requests else "",
            "error": error,
        }
    return pins


def _pinned() -> dict[str, Any]:
    return json.loads(PINS.read_text(encoding="utf-8"))


def _case_ids() -> list[str]:
    return [key(n, layout) for n, layout in cases()]


def test_every_method_and_layout_is_pinned():
    """A method added (or a layout option gained) since the pins were made is not
    silently unchecked: it is listed here until its prompts are pinned."""
    assert sorted(_pinned()) == sorted(_case_ids())


@pytest.mark.parametrize(("name", "layout"), cases(), ids=_case_ids())
async def test_prompts_are_byte_identical_to_the_pinned_ones(name, layout):
    pin = _pinned().get(key(name, layout))
    if pin is None:
        pytest.fail(f"{key(name, layout)} has no pin (see the module docstring)")
    requests, _ = await record(name, layout)
    if digest(requests) == pin["sha256"]:
        return
    # say what changed: the first request whose hash is not among the pinned ones
    changed = [r for r in requests if digest([r]) not in set(pin["digests"])]
    shown = flatten(changed[0]) if changed else flatten(requests[0]) if requests else ""
    diff = "\n".join(
        difflib.unified_diff(
            pin["first"].splitlines(), shown[:EXCERPT].splitlines(), "pinned", "now", lineterm=""
        )
    )
    pytest.fail(
        f"{key(name, layout)}: {len(requests)} requests now, {pin['requests']} pinned; "
        f"{len(changed)} differ. A changed request against the first pinned one:\n"
        f"{diff[:6000] or shown[:3000]}"
    )


def main(argv: list[str]) -> int:
    import veracity

    pins = generate()
    text = json.dumps(pins, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if "--write" in argv:
        PINS.write_text(text, encoding="utf-8")
    print(f"veracity from {Path(veracity.__file__).parent}; {len(pins)} entries")
    for k, v in pins.items():
        err = re.sub(r"\s+", " ", v["error"] or "")[:80]
        print(f"{k:28} {v['requests']:3} {v['sha256'][:12]} {err}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
