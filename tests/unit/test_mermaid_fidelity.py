"""MERMAID against its paper, round two (issue 24, items 7-10).

7. The Table 3 ablation without the decomposer keeps the memory: its entity keys come
   from the shared NER, so a second check of one claim recalls what the first stored.
8. The update step keeps only the evidence the executor judged relevant (section 3.3,
   "retain valid evidence"); storing everything is the named variant ``retain: all``.
9. Figure 3 covers HoVer, and the proxy-memory experiment has a config with the paper's
   numbers.
10. The decomposer's caps are stated under the README's deviations.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_mermaid import EIFFEL, answer, call, method, scripted

from veracity.core.errors import MethodConfigError
from veracity.core.types import Claim, Document
from veracity.evaluation.experiment import experiment_dir, load_experiment
from veracity.methods.mermaid import Decomposition, MermaidMethod
from veracity.runtime.home import home_paths
from veracity.testing import InMemorySource, ScriptedLLM

README = Path(__file__).parents[2] / "src/veracity/methods/mermaid/README.md"


def retain(*numbers: int) -> str:
    return json.dumps({"relevant": list(numbers)})


def executor_only(*steps, keep=None) -> ScriptedLLM:
    llm = ScriptedLLM()
    for i, s in enumerate(steps, 1):
        llm.on(".*", s, tag=f"executor:{i}")
    if keep is not None:
        llm.on(".*", keep, tag="retain")
    return llm


# ----------------------------------------------------------------- 7: no_decomposer


@pytest.mark.nlp
async def test_no_decomposer_keys_memory_by_named_entities_so_recall_works(tmp_path):
    claim = Claim(text="The Eiffel Tower is in Berlin.")
    first = executor_only(call("Eiffel Tower"), answer("false"), keep=retain(1))
    v1 = await method(first, tmp_path, decompose=False).check(claim)
    assert v1.error is None and v1.metadata["decomposition"] is None
    assert not first.calls_tagged("decomposer")
    assert v1.metadata["entity_keys"] == {"from": "ner", "entities": ["The Eiffel Tower", "Berlin"]}
    assert v1.metadata["memory"]["stored"] == 1
    second = executor_only(answer("false"), keep=retain())
    v2 = await method(second, tmp_path, decompose=False).check(claim)
    assert v2.metadata["memory"]["recalled"] >= 1  # 0 before: no keys without triplets
    assert v2.metadata["counters"]["memory_recalled"] == v2.metadata["memory"]["recalled"]
    opening = second.calls_tagged("executor:1")[0].messages[-1].content
    assert "Evidence remembered from earlier checks" in opening and "[d1]" in opening
    assert "Background" not in opening  # still no decomposition shown


@pytest.mark.nlp
async def test_no_decomposer_claim_without_named_entities_says_so(tmp_path):
    claim = Claim(text="water remembers what was dissolved in it")
    llm = executor_only(answer("false"))
    verdict = await method(llm, tmp_path, decompose=False).check(claim)
    assert verdict.metadata["entity_keys"] == {"from": "ner", "entities": []}
    assert any("no named entities" in e.data.get("text", "") for e in verdict.trace.of_kind("note"))


async def test_full_variant_keys_memory_by_the_decomposition(tmp_path):
    llm = scripted(call("Eiffel Tower"), answer("false"))
    verdict = await method(llm, tmp_path).check(EIFFEL)
    keys = verdict.metadata["entity_keys"]
    assert keys == {"from": "decomposer", "entities": ["Eiffel Tower", "Berlin"]}


# ----------------------------------------------------------------- 8: retain valid evidence

BOTH = [
    Document(id="d1", title="Eiffel Tower", text="The Eiffel Tower stands in Paris, France."),
    Document(id="d2", title="Tower Records", text="Tower Records sold music in Berlin."),
]


async def test_update_stores_only_the_documents_the_executor_judged_relevant(tmp_path):
    llm = scripted(call("Tower"), answer("false"), keep=retain(1))
    m = method(llm, tmp_path, docs=BOTH)
    verdict = await m.check(EIFFEL)
    assert verdict.label == "false"
    [asked] = llm.calls_tagged("retain")
    prompt = asked.messages[-1].content
    assert "[1] Eiffel Tower:" in prompt and "[2] Tower Records:" in prompt
    assert "<documents>" in prompt  # retrieved text is fenced as data
    assert asked.json_schema["properties"]["relevant"]["items"]["enum"] == [1, 2]
    counters = verdict.metadata["counters"]
    assert counters["evidence_retrieved"] == 2 and counters["evidence_kept"] == 1
    assert verdict.metadata["memory"]["stored"] == 1  # 2 before: everything was stored
    [note] = [e for e in verdict.trace.of_kind("note") if e.name == "memory retention"]
    assert note.data["text"] == "kept 1 of 2 retrieved documents"
    assert note.data["kept"] == ["d1"] and note.data["dropped"] == ["d2"]
    assert m.memory().stats().entries == 1
    # the remembered search replays the kept document only
    again = scripted(call("Tower"), answer("false"))
    replayed = await method(again, tmp_path, docs=BOTH).check(EIFFEL)
    assert replayed.metadata["counters"]["searches_saved"] == 1
    step = again.calls_tagged("executor:2")[0].messages[-1].content
    assert "Paris, France" in step and "sold music" not in step


async def test_store_everything_is_the_named_variant(tmp_path):
    llm = scripted(call("Tower"), answer("false"))
    m = method(llm, tmp_path, docs=BOTH, memory={"retain": "all"})
    verdict = await m.check(EIFFEL)
    assert not llm.calls_tagged("retain")  # no judgement asked
    assert verdict.metadata["memory"]["stored"] == 2
    counters = verdict.metadata["counters"]
    assert counters["evidence_retrieved"] == counters["evidence_kept"] == 2


async def test_nothing_judged_relevant_stores_nothing_not_even_the_search(tmp_path):
    llm = scripted(call("Tower"), answer("false"), keep=retain())
    m = method(llm, tmp_path, docs=BOTH)
    verdict = await m.check(EIFFEL)
    assert verdict.metadata["memory"]["stored"] == 0 and m.memory().stats().entries == 0
    again = scripted(call("Tower"), answer("false"))
    replayed = await method(again, tmp_path, docs=BOTH).check(EIFFEL)
    assert replayed.metadata["counters"]["tool_calls"] == 1  # searched again, not replayed


async def test_an_unusable_retention_reply_keeps_the_verdict_and_stores_nothing(tmp_path):
    llm = scripted(call("Tower"), answer("false"), keep=retain(7))  # there is no document 7
    m = method(llm, tmp_path, docs=BOTH)
    verdict = await m.check(EIFFEL)
    assert verdict.label == "false" and verdict.error is None
    assert len(llm.calls_tagged("retain")) == 3  # asked, then re-asked twice
    assert verdict.metadata["memory"]["stored"] == 0
    assert verdict.metadata["memory"]["retain_error"].startswith("nothing stored:")
    assert verdict.metadata["counters"]["evidence_kept"] == 0
    assert any(e.name == "retain" and not e.data["fatal"] for e in verdict.trace.of_kind("error"))


async def test_read_only_memory_asks_no_retention(tmp_path):
    llm = scripted(call("Tower"), answer("false"))
    m = method(llm, tmp_path, docs=BOTH, memory={"mode": "read-only"})
    verdict = await m.check(EIFFEL)
    assert not llm.calls_tagged("retain")
    assert verdict.metadata["counters"]["evidence_retrieved"] == 2
    assert verdict.metadata["counters"]["evidence_kept"] == 0


# ----------------------------------------------------------------- 9: Figure 3 and proxy memory

WIKI_TOOLS = [
    "search_wikipedia", "wikipedia_summary", "wikipedia_page", "wikipedia_sections",
    "wikipedia_section", "wikipedia_related",
]  # fmt: skip


def test_figure3_runs_hover_with_and_without_memory():
    cfg = load_experiment(experiment_dir() / "mermaid_figure3.yaml")
    for hops in (2, 3, 4):
        on = cfg.with_variant(f"hover_{hops}hop")
        off = cfg.with_variant(f"hover_{hops}hop_no_memory")
        for run in (on, off):
            assert run.dataset == f"mermaid_hover_{hops}hop"
            assert run.labels == "supported_refuted"
            assert run.sources["wikipedia"] == {}  # live Wikipedia, as in Table 2
            assert run.method_config["tools"] == WIKI_TOOLS
        assert on.method_config["memory"]["mode"] == "on"
        assert off.method_config["memory"]["mode"] == "off"
    assert "HoVer 348 → 330" in cfg.paper.missing


def test_proxy_memory_config_carries_the_papers_numbers():
    cfg = load_experiment(experiment_dir() / "mermaid_proxy_memory.yaml")
    assert cfg.dataset == "mermaid_factcheckbench"

    def rows(variant):
        return {r.model: r.metrics["macro_f1"] for r in cfg.with_variant(variant).paper_rows()}

    assert rows("baseline") == {"LLaMA-3.1-8B-Inst": 0.54, "OSS-20B": 0.67}
    assert rows("proxy_no_tools") == {"LLaMA-3.1-8B-Inst": 0.65}
    assert rows("proxy_with_tools") == {"OSS-20B": 0.71}
    build = cfg.with_variant(None).method_config["memory"]
    assert build == {"mode": "on", "name": "proxy_factcheckbench"}
    for variant, tools in (("proxy_no_tools", []), ("proxy_with_tools", None)):
        mcfg = cfg.with_variant(variant).method_config
        assert mcfg["memory"] == {"mode": "read-only", "name": "proxy_factcheckbench"}
        assert mcfg.get("tools") == tools
    assert "name" not in cfg.with_variant("baseline").method_config["memory"]


def _named(llm, mode: str, **config) -> MermaidMethod:
    memory = {"name": "proxy", "mode": mode, "embedder": "hashing"}
    cfg = {"tool_transport": "inprocess", "memory": memory, **config}
    wiki = {"wiki": InMemorySource(BOTH, name="wiki")}
    return MermaidMethod(llm=llm, config=cfg, sources=wiki, home=home_paths())


async def test_a_named_memory_built_by_one_model_is_read_by_another_without_tools(tmp_path):
    with pytest.raises(MethodConfigError, match=r"holds no evidence yet.*mermaid_proxy_memory"):
        _named(scripted(answer("false")), "read-only", tools=[])
    builder = scripted(call("Eiffel Tower"), answer("false"), keep=retain(1))
    await _named(builder, "on").check(EIFFEL)
    reader = scripted(answer("false"))
    m = _named(reader, "read-only", tools=[])
    verdict = await m.check(EIFFEL)
    assert verdict.metadata["memory"]["recalled"] == 1 and verdict.metadata["memory"]["stored"] == 0
    assert verdict.metadata["counters"]["tool_calls"] == 0
    [first] = reader.calls_tagged("executor:1")
    assert "action" not in json.dumps(first.json_schema)  # no tool can be called
    system, prompt = first.messages[0].content, first.messages[-1].content
    assert "Eiffel Tower stands in Paris" in prompt and "No tools are available" in system
    assert m.memory().namespace == "default"  # shared by name, not by the run's data set


def test_a_memory_has_a_path_or_a_name():
    from veracity.methods.mermaid import MemoryOptions

    with pytest.raises(ValueError, match="path or a name"):
        MemoryOptions(path="x.sqlite", name="proxy")
    with pytest.raises(ValueError):
        MemoryOptions(name="../elsewhere")


# ----------------------------------------------------------------- 10: the decomposer's caps


def test_the_decomposers_caps_are_stated_as_a_deviation():
    schema = Decomposition.model_json_schema()
    triplets, topics = schema["properties"]["triplets"], schema["properties"]["topics"]
    attributes = schema["$defs"]["Triplet"]["properties"]["attributes"]
    caps = (triplets["minItems"], triplets["maxItems"], topics["minItems"], topics["maxItems"])
    assert caps == (1, 4, 1, 3)
    deviations = README.read_text().split("## Deviations", 1)[1].split("\n## ", 1)[0]
    stated = re.search(r"\*\*Decomposer caps\.\*\*(.+?)(?=\n- \*\*|\Z)", deviations, re.S)
    assert stated, "the README's deviations must state the decomposer's caps"
    text = " ".join(stated[1].split())
    assert "1–4 triplets" in text and "1–3 topic" in text
    assert f"at most {attributes['maxItems']} attributes" in text
