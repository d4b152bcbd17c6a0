"""Every reply model of the package, and what the embedded decoder can and cannot enforce.

A reply model is a pydantic model whose JSON schema goes with a request for structured
output. They are found from the source, not listed by hand: `structured_call_sites`
reads every call of ``complete_structured``, ``ask_choice`` and ``ask_label`` (and of
any function that passes its own parameter on as their output model) and names the
expression given as the output model. `REPLY_MODELS` says how to build the models each
such expression stands for; a call site it does not know makes the test fail, so a new
reply model cannot go unchecked.

`validator_findings` lists the validators of a model (its own and its nested models')
that are neither marked `schema_safe` nor exempted, with a reason, in the owning model's
``schema_exempt``. (What the decoder cannot enforce is in `_grammar_lint`.)
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import veracity
from veracity.llm.reply_schema import SCHEMA_SAFE

SRC = Path(veracity.__file__).parent
# The functions that send a reply model: name -> (keyword, position) of the model.
STRUCTURED_CALLS = {
    "complete_structured": ("output", 2),
    "ask_choice": ("output", 2),
    "ask_label": ("output", 2),
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _called(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _functions(tree: ast.AST, outer: tuple[str, ...] = ()) -> Iterator[tuple[ast.AST, set[str]]]:
    """Each function with the parameters in scope (its own and its enclosing functions')."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            scope = (*outer, *(a.arg for a in args))
            yield node, set(scope)
            yield from _functions(node, scope)
        else:
            yield from _functions(node, outer)


def _params(fn: Any) -> list[str]:
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    return names[1:] if names and names[0] in ("self", "cls") else names


def _output_arg(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    found = next((k.value for k in call.keywords if k.arg == keyword), None)
    if found is None and len(call.args) > position:
        found = call.args[position]
    return found


def _assigned(fn: ast.AST, arg: ast.expr) -> ast.expr:
    """What a local name passed as the model was set to (``output = make(...)``)."""
    if isinstance(arg, ast.Name):
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == [arg.id]:
                return node.value
    return arg


def structured_call_sites() -> dict[tuple[str, str], list[str]]:
    """(module, output expression) -> the functions calling with it, for every structured
    call in the package. Calls that pass a parameter of the enclosing function on are
    followed to that function's callers instead."""
    trees = {_module(p): ast.parse(p.read_text(encoding="utf-8")) for p in SRC.rglob("*.py")}
    senders = dict(STRUCTURED_CALLS)
    while True:
        sites: dict[tuple[str, str], list[str]] = {}
        grew = False
        for module, tree in trees.items():
            for fn, scope in _functions(tree):
                for call in ast.walk(fn):
                    if not isinstance(call, ast.Call) or _called(call) not in senders:
                        continue
                    arg = _output_arg(call, *senders[_called(call)])
                    if isinstance(arg, ast.Name) and arg.id in scope:
                        own = _params(fn)
                        if arg.id in own and fn.name not in senders:  # type: ignore[attr-defined]
                            senders[fn.name] = (arg.id, own.index(arg.id))  # type: ignore[attr-defined]
                            grew = True
                    elif arg is not None:
                        arg = _assigned(fn, arg)
                        key = ast.unparse(arg.func if isinstance(arg, ast.Call) else arg)
                        sites.setdefault((module, key), []).append(fn.name)  # type: ignore[attr-defined]
        if not grew:
            return sites


# ----------------------------------------------------------------------- the models


def _label_spaces() -> list[Any]:
    from veracity.core.labels import LABEL_SPACES
    from veracity.methods.s2mad import DEBATE_ANSWERS

    return [*LABEL_SPACES.values(), DEBATE_ANSWERS]


def tool_input_models() -> list[type[BaseModel]]:
    """Every tool argument model of the package, and each as a remote (MCP) tool's."""
    from veracity.tools.base import SearchInput
    from veracity.tools.evidence import SectionInput, TitleInput, UrlInput
    from veracity.tools.schema import model_from_schema

    local = [SearchInput, TitleInput, SectionInput, UrlInput]
    remote = [model_from_schema(f"remote_{m.__name__}", m.model_json_schema()) for m in local]
    return local + remote


class _Tool:
    def __init__(self, name: str, input_model: type[BaseModel]):
        self.name, self.description, self.input_model = name, "a tool", input_model


def _steps() -> list[type[BaseModel]]:
    from veracity.deliberation.react import FlatSteps, ToolCallSteps

    tools = [_Tool(f"t{i}_{m.__name__}", m) for i, m in enumerate(tool_input_models())]
    search = [t for t in tools if "SearchInput" in t.name]
    out = [FlatSteps().model(search)]
    for space in _label_spaces():
        fmt = ToolCallSteps(space.labels)
        out += [fmt.model(tools), fmt.model(tools[:1]), fmt.model([], answer_only=True)]
    return out


def _each_space(build: Callable[[Any], type[BaseModel] | list[type[BaseModel]]]) -> Any:
    def models() -> list[type[BaseModel]]:
        out: list[type[BaseModel]] = []
        for space in _label_spaces():
            built = build(space)
            out += built if isinstance(built, list) else [built]
        return out

    return models


def _imported(module: str, *names: str) -> Callable[[], list[type[BaseModel]]]:
    def models() -> list[type[BaseModel]]:
        mod = __import__(module, fromlist=list(names))
        return [getattr(mod, n) for n in names]

    return models


def _call(module: str, name: str, *arg_sets: tuple[Any, ...]) -> Callable[[], list[Any]]:
    def models() -> list[type[BaseModel]]:
        func = getattr(__import__(module, fromlist=[name]), name)
        return [func(*args) for args in arg_sets]

    return models


def _baselines(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.baselines import _answer_model

    return [_answer_model(space, True), _answer_model(space, False)]


def _rag(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.rag import _answer_model

    return [_answer_model(space, n, r) for n in (1, 5) for r in (True, False)]


def _judges(space: Any) -> list[type[BaseModel]]:
    from veracity.deliberation.judges import verdict_model

    return [verdict_model(space.labels), verdict_model([*space.labels, "INSUFFICIENT"])]


def _stances(space: Any) -> type[BaseModel]:
    from veracity.deliberation.agents import stance_model

    return stance_model(space.labels)


def _react_answer(space: Any) -> type[BaseModel]:
    from veracity.methods.react import answer_model

    return answer_model(space)


def _fire(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.fire.steps import final_model, step_model

    return [step_model(space), step_model(space, 200, 50), final_model(space)]


def _stance_scores() -> list[type[BaseModel]]:
    from veracity.methods.s2mad.stance import _batch_model

    return [_batch_model(["c1"], True), _batch_model(["c1", "c2", "c3"], False)]


def _claim_lists() -> list[type[BaseModel]]:
    from veracity.evidence.claims import Category, _claim_text, _list_model

    text = _claim_text(300)
    return [_list_model("A", text, 0, 6, "d"), _list_model("B", text, 2, 2, "d"),
            _list_model("C", Category, 3, 3, "d")]  # fmt: skip


def _claim_windows() -> list[type[BaseModel]]:
    from veracity.evidence.claims import ExtractionConfig, _window_model

    plain = ExtractionConfig(decontextualise=False, checkworthiness=False)
    return [_window_model(8, ExtractionConfig()), _window_model(1, plain)]


def _folk(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.folk.method import answer_model, decomposition_model, prediction_model

    return [decomposition_model(5), answer_model(300), prediction_model(space, 1200)]


def _programfc() -> list[type[BaseModel]]:
    from veracity.methods.programfc.method import VerifyReply, answer_model, program_model

    return [program_model(8, 300), answer_model(200), VerifyReply]


def _self_ask(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.self_ask.method import final_model, intermediate_model

    return [intermediate_model(200), final_model(space)]


def _factool() -> list[type[BaseModel]]:
    from veracity.methods.factool.method import claims_model, queries_model, verification_model

    return [queries_model(2, 200), verification_model(1000), claims_model(300)]


def _factcheck_gpt() -> list[type[BaseModel]]:
    from veracity.methods.factcheck_gpt.method import (
        queries_model,
        stance_model,
        stances_model,
        verification_model,
    )

    return [
        queries_model(2, 200),
        stances_model(1),
        stances_model(6),
        verification_model(1000),
        stance_model(),
    ]


def _safe() -> list[type[BaseModel]]:
    from veracity.methods.safe.method import _query_model, _rating_model

    return [_query_model(200), _rating_model(1200)]


def _adsent(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.adsent.method import answer_model, neutral_model

    return [neutral_model(2000), answer_model(space, 1200)]


def _afacta(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.afacta.method import PATHS, path_model

    return [path_model(p, space, 800) for p in PATHS]


def _defgen(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.defgen.method import reply_model

    return [reply_model(space, 300, 1200)]


def _steel(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.steel.replies import final_model, round_model

    return [round_model(space, 5, 1200, 200), round_model(space, 0, 1200, 200),
            final_model(space, 1200)]  # fmt: skip


def _factagent(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.factagent.replies import finding_model, verdict_model

    return [finding_model(800), verdict_model(space, 1000)]


def _hiss(space: Any) -> list[type[BaseModel]]:
    from veracity.methods.hiss.replies import (
        answer_model,
        omission_model,
        steps_model,
        subclaims_model,
        verdict_model,
    )

    return [subclaims_model(4, 300), steps_model(3, 300), answer_model(300),
            omission_model(600), verdict_model(space, 1200)]  # fmt: skip


CLAIM = "The Eiffel Tower was moved to Berlin in 2019 by the French state."
_Z, _T = "veracity.methods.zofia", "veracity.methods.toe"
# (module, output expression at the call) -> the models it stands for
REPLY_MODELS: dict[tuple[str, str], Callable[[], list[type[BaseModel]]]] = {
    ("veracity.deliberation.agents", "stance_model"): _each_space(_stances),
    ("veracity.deliberation.judges", "verdict_model"): _each_space(_judges),
    ("veracity.deliberation.react", "fmt.model"): _steps,
    ("veracity.evaluation.advfact", "passages_model"): _call(
        "veracity.evaluation.advfact", "passages_model", (1,), (5,)
    ),
    ("veracity.evaluation.advfact", "rewrite_model"): _call(
        "veracity.evaluation.advfact", "rewrite_model", (CLAIM,)
    ),
    ("veracity.methods.baselines", "_answer_model"): _each_space(_baselines),
    ("veracity.methods.d2d.judging", "score_model"): _call(
        "veracity.methods.d2d.judging", "score_model", (7,), (2,)
    ),
    ("veracity.methods.d2d.roles", "DomainReply"): _imported(
        "veracity.methods.d2d.roles", "DomainReply"
    ),
    ("veracity.methods.fire.method", "step_model"): _each_space(_fire),
    ("veracity.methods.fire.method", "final_model"): _each_space(_fire),
    ("veracity.methods.mermaid.decomposer", "Decomposition"): _imported(
        "veracity.methods.mermaid.decomposer", "Decomposition"
    ),
    ("veracity.methods.mermaid.executor", "fmt.model"): _steps,
    ("veracity.methods.mermaid.retention", "retention_model"): _call(
        "veracity.methods.mermaid.retention", "retention_model", (1,), (15,)
    ),
    ("veracity.methods.radar.roles", "DomainReply"): _imported(
        "veracity.methods.radar.roles", "DomainReply"
    ),
    ("veracity.methods.radar.stopping", "StopReply"): _imported(
        "veracity.methods.radar.stopping", "StopReply"
    ),
    ("veracity.methods.rag", "_answer_model"): _each_space(_rag),
    ("veracity.methods.react", "answer_model"): _each_space(_react_answer),
    ("veracity.methods.s2mad.method", "SubjectivityAnswer"): _imported(
        "veracity.methods.s2mad.method", "SubjectivityAnswer"
    ),
    ("veracity.methods.s2mad.stance", "_batch_model"): _stance_scores,
    (f"{_T}.agents", "ClaimFeatures"): _imported(f"{_T}.schema", "ClaimFeatures"),
    (f"{_T}.agents", "JudgeScores"): _imported(f"{_T}.schema", "JudgeScores"),
    (f"{_T}.agents", "SearchQuery"): _imported(f"{_T}.schema", "SearchQuery"),
    (f"{_T}.agents", "decomposition_model"): _call(
        f"{_T}.schema", "decomposition_model", (2, 4, CLAIM), (1, 3)
    ),
    (f"{_T}.evidence", "CleanedChunk"): _imported(f"{_T}.schema", "CleanedChunk"),
    (f"{_T}.evidence", "EvidenceAnalysis"): _imported(f"{_T}.schema", "EvidenceAnalysis"),
    (f"{_Z}.analysis", "ClaimCheckReply"): _imported(f"{_Z}.analysis", "ClaimCheckReply"),
    (f"{_Z}.analysis", "ExpertReport"): _imported(f"{_Z}.analysis", "ExpertReport"),
    (f"{_Z}.analysis", "ExpertTriage"): _imported(f"{_Z}.analysis", "ExpertTriage"),
    (f"{_Z}.analysis", "ExtractedClaims"): _imported(f"{_Z}.analysis", "ExtractedClaims"),
    (f"{_Z}.analysis", "LinguistReport"): _imported(f"{_Z}.analysis", "LinguistReport"),
    (f"{_Z}.retrieval", "LLMKeywords"): _imported(f"{_Z}.retrieval", "LLMKeywords"),
    ("veracity.nlp.ner_llm", "output_model"): _call(
        "veracity.nlp.ner_llm", "output_model", (("PERSON", "LOCATION"), True), (("MISC",), False)
    ),
    ("veracity.evidence.claims", "_list_model"): _claim_lists,
    ("veracity.evidence.claims", "_window_model"): _claim_windows,
    ("veracity.methods.safe.method", "_query_model"): _safe,
    ("veracity.methods.safe.method", "_rating_model"): _safe,
    ("veracity.methods.folk.method", "decomposition_model"): _each_space(_folk),
    ("veracity.methods.folk.method", "answer_model"): _each_space(_folk),
    ("veracity.methods.folk.method", "prediction_model"): _each_space(_folk),
    ("veracity.methods.programfc.method", "program_model"): _programfc,
    ("veracity.methods.programfc.method", "answer_model"): _programfc,
    ("veracity.methods.programfc.method", "VerifyReply"): _programfc,
    ("veracity.methods.self_ask.method", "intermediate_model"): _each_space(_self_ask),
    ("veracity.methods.self_ask.method", "final_model"): _each_space(_self_ask),
    ("veracity.methods.factool.method", "queries_model"): _factool,
    ("veracity.methods.factool.method", "verification_model"): _factool,
    ("veracity.methods.factool.method", "claims_model"): _factool,
    ("veracity.methods.factcheck_gpt.method", "queries_model"): _factcheck_gpt,
    ("veracity.methods.factcheck_gpt.method", "stances_model"): _factcheck_gpt,
    ("veracity.methods.factcheck_gpt.method", "stance_model"): _factcheck_gpt,
    ("veracity.methods.factcheck_gpt.method", "verification_model"): _factcheck_gpt,
    ("veracity.methods.adsent.method", "neutral_model"): _each_space(_adsent),
    ("veracity.methods.adsent.method", "answer_model"): _each_space(_adsent),
    ("veracity.methods.afacta.method", "path_model"): _each_space(_afacta),
    ("veracity.methods.defgen.method", "reply_model"): _each_space(_defgen),
    ("veracity.methods.steel.method", "round_model"): _each_space(_steel),
    ("veracity.methods.steel.method", "final_model"): _each_space(_steel),
    ("veracity.methods.factagent.method", "replies.verdict_model"): _each_space(_factagent),
    ("veracity.methods.factagent.method", "replies.finding_model"): _each_space(_factagent),
    ("veracity.methods.hiss.method", "replies.subclaims_model"): _each_space(_hiss),
    ("veracity.methods.hiss.method", "replies.verdict_model"): _each_space(_hiss),
    ("veracity.methods.hiss.method", "replies.omission_model"): _each_space(_hiss),
    ("veracity.methods.hiss.method", "replies.steps_model"): _each_space(_hiss),
    ("veracity.methods.hiss.method", "replies.answer_model"): _each_space(_hiss),
    ("veracity.methods.teller.method", "YesNo"): _imported(
        "veracity.methods.teller.method", "YesNo"
    ),
    ("veracity.methods.teller.method", "Context"): _imported(
        "veracity.methods.teller.method", "Context"
    ),
    ("veracity.documents.checking", "_CorrectionReply"): _imported(
        "veracity.documents.checking", "_CorrectionReply"
    ),
}


def all_reply_models() -> dict[str, type[BaseModel]]:
    """Every reply model, by a readable id (module:expression:index)."""
    out: dict[str, type[BaseModel]] = {}
    for (module, expr), build in REPLY_MODELS.items():
        for i, model in enumerate(build()):
            out[f"{module.removeprefix('veracity.')}:{expr}:{i}"] = model
    return out


# ----------------------------------------------------------------------- validators


def _walk(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            if key not in ("cls", "function", "ref", "metadata"):
                yield from _walk(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _walk(value)


def _owner(func: Any, classes: list[type]) -> tuple[type | None, str]:
    """The model class that declares validator `func`, and the validator's name."""
    raw = getattr(func, "__func__", func)
    for cls in classes:
        decorators = cls.__pydantic_decorators__
        for group in (decorators.field_validators, decorators.model_validators):
            for name, dec in group.items():
                if getattr(dec.func, "__func__", dec.func) is raw:
                    return cls, name
    return None, getattr(raw, "__qualname__", repr(raw))


def validators(model: type[BaseModel]) -> list[tuple[type | None, str, Any]]:
    """(owning model or None, name, function) of every function validator in `model`'s
    core schema, its nested models' included."""
    nodes = list(_walk(model.__pydantic_core_schema__))
    classes = [n["cls"] for n in nodes if n.get("type") == "model"]
    found = []
    for node in nodes:
        if str(node.get("type", "")).startswith("function-"):
            func = node["function"]["function"]
            found.append((*_owner(func, classes), func))
    return found


def exemptions(model: type[BaseModel]) -> dict[str, str]:
    """Validator name -> reason, from ``schema_exempt`` of `model` and its nested models."""
    nodes = list(_walk(model.__pydantic_core_schema__))
    out: dict[str, str] = {}
    for node in nodes:
        if node.get("type") == "model":
            out.update(getattr(node["cls"], "schema_exempt", {}))
    return out


def validator_findings(model: type[BaseModel]) -> list[str]:
    """Validators that are neither `schema_safe` nor exempted with a reason."""
    findings = []
    for owner, name, func in validators(model):
        if getattr(func, SCHEMA_SAFE, False):
            continue
        reason = getattr(owner, "schema_exempt", {}).get(name, "") if owner else ""
        if len(reason.split()) < 5:
            where = owner.__name__ if owner else "an Annotated type"
            findings.append(
                f"{where}.{name}: a validator the JSON schema does not express (mark it "
                "schema_safe if it rejects nothing the schema allows, or give the reason "
                "in the model's schema_exempt)"
            )
    return findings


def exempt_fields(model: type[BaseModel]) -> set[str]:
    """Fields (and "" for the whole model) checked by an exempted validator."""
    out: set[str] = set()
    for node in _walk(model.__pydantic_core_schema__):
        if node.get("type") != "model":
            continue
        cls = node["cls"]
        exempt = getattr(cls, "schema_exempt", {})
        decorators = cls.__pydantic_decorators__
        for name, dec in decorators.field_validators.items():
            if name in exempt:
                out.update(dec.info.fields)
        if any(name in exempt for name in decorators.model_validators):
            out.add("")
    return out
