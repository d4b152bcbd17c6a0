"""Every number a request, a flag or a file can set has an upper bound (issue 38, item 3).

Two halves:

- a walk over every config and request model (all pydantic models of the ``veracity``
  package whose names say they are settings, every method's ``config_class``, every LLM
  backend's ``options_class``, the server's request model, and every model nested in
  them), the MCP tools' input schemas and the CLI's numeric flags, failing on a number
  without a maximum;
- probes as an attacker would send them: huge numbers through REST (a real server on
  127.0.0.1), MCP (the official SDK's client), the CLI (a subprocess) and a run file.
  Each is classified: refused clearly at submit time (422 / exit status 2 with one line /
  a tool error naming the field), crashed (a 5xx, a traceback, a job or tool call that
  failed later without the reason), silently wrong (accepted and run) or a hole.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import time
import types
import typing
from pathlib import Path
from typing import Any

import annotated_types
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

import veracity
from veracity.core import registry
from veracity.core.config import RunConfig
from veracity.core.errors import ConfigError
from veracity.mcp.server import build_server
from veracity.server import BackgroundServer, ServerSettings, create_app
from veracity.testing.schema import schema_llm

from .conftest import run_cli
from .tally import Tally

HUGE = 10**12
DOCUMENT = "Rome is the capital of Italy. The Tiber flows through Rome."

# ------------------------------------------------------------------- the models walked

# class names that say a model holds settings someone sets (a run file, a flag, a request)
SETTINGS_SUFFIXES = ("Config", "Options", "Settings", "Limits", "Params", "Spec", "Request")

# Numeric fields without a maximum that no user can set, each with why. Keep it short.
ALLOWED_UNBOUNDED: dict[str, str] = {
    # filled by the code from the model's reply, never from a request or a file
    "veracity.llm.base.LLMRequest.max_tokens": "bounded (65,536) by its own Field",
}


def _all_models() -> set[type[BaseModel]]:
    for info in pkgutil.walk_packages(veracity.__path__, "veracity."):
        if not info.name.endswith("__main__"):  # `python -m veracity` runs the CLI
            importlib.import_module(info.name)
    found: set[type[BaseModel]] = set()
    todo = list(BaseModel.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.add(cls)
            todo.extend(cls.__subclasses__())
    return {c for c in found if c.__module__.startswith("veracity.")}


def _nested(annotation: Any) -> list[Any]:
    """Every type inside `annotation` (unions, containers and Annotated opened)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        return [args[0], *_nested(args[0])]
    return [t for a in args for t in (a, *_nested(a))]


def settable_models() -> set[type[BaseModel]]:
    """The config and request models: named as settings, a method's config, a backend's
    options, the server's request, and every model nested in one of them."""
    from veracity.server.schemas import CheckRequest

    roots = {c for c in _all_models() if c.__name__.endswith(SETTINGS_SUFFIXES)}
    roots.add(CheckRequest)
    for name in registry.methods.names():
        roots.add(registry.methods.get(name).config_class)
    for name in registry.llm_backends.names():
        options = getattr(registry.llm_backends.get(name), "options_class", None)
        if isinstance(options, type) and issubclass(options, BaseModel):
            roots.add(options)
    seen: set[type[BaseModel]] = set()
    todo = list(roots)
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for field in cls.model_fields.values():
            for inner in _nested(field.annotation):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    todo.append(inner)
    return seen


def _has_max(metadata: list[Any]) -> bool:
    return any(isinstance(m, annotated_types.Le | annotated_types.Lt) for m in metadata)


def _leaves(annotation: Any, bounded: bool) -> list[tuple[type, bool]]:
    """The int/float leaves of `annotation`, each with whether a maximum applies to it."""
    origin = typing.get_origin(annotation)
    if annotation in (int, float):
        return [(annotation, bounded)]
    if origin is typing.Annotated:
        inner, *meta = typing.get_args(annotation)
        flat = [x for m in meta for x in (getattr(m, "metadata", None) or [m])]
        return _leaves(inner, bounded or _has_max(flat))
    if origin in (typing.Union, types.UnionType):
        return [x for a in typing.get_args(annotation) for x in _leaves(a, bounded)]
    if origin is typing.Literal:
        return []
    # a container: its elements need their own bound
    return [x for a in typing.get_args(annotation) if a is not Ellipsis for x in _leaves(a, False)]


def numeric_fields() -> list[tuple[str, bool]]:
    """(qualified field name, every number in it has a maximum) for each numeric field."""
    rows = []
    for cls in settable_models():
        for name, field in cls.model_fields.items():
            leaves = _leaves(field.annotation, _has_max(field.metadata))
            if leaves:
                qual = f"{cls.__module__}.{cls.__qualname__}.{name}"
                rows.append((qual, all(ok for _, ok in leaves)))
    return sorted(rows)


def test_every_numeric_field_of_every_config_and_request_model_has_a_maximum(capsys):
    rows = numeric_fields()
    missing = [q for q, ok in rows if not ok and q not in ALLOWED_UNBOUNDED]
    with capsys.disabled():
        models = len(settable_models())
        print(f"\nnumeric bounds: {len(rows)} numeric fields of {models} config/request models")
    assert len(rows) > 400  # the walk found the models (a broken walk checks nothing)
    assert missing == [], "numbers without an upper bound:\n" + "\n".join(missing)


def test_the_walk_sees_nested_and_container_numbers():
    """The walk itself: a bound inside an Optional, a dict's values, a tuple's items."""
    from typing import Annotated

    from pydantic import Field

    capped = Annotated[int, Field(le=5)]
    assert _leaves(capped | None, False) == [(int, True)]
    assert _leaves(dict[str, float], True) == [(float, False)]
    assert _leaves(tuple[capped, capped], False) == [(int, True), (int, True)]
    assert _leaves(float | typing.Literal["seed"], False) == [(float, False)]


async def test_every_numeric_mcp_tool_argument_has_a_maximum():
    async with Client(build_server(RunConfig(method="cot"), llm=schema_llm())) as client:
        tools = (await client.list_tools()).tools
    missing = []
    numbers = 0

    def walk(schema: Any, where: str) -> None:
        nonlocal numbers
        if isinstance(schema, dict):
            if schema.get("type") in ("integer", "number"):
                numbers += 1
                if "maximum" not in schema and "exclusiveMaximum" not in schema:
                    missing.append(where)
            for key, value in schema.items():
                walk(value, f"{where}.{key}")
        elif isinstance(schema, list):
            for i, value in enumerate(schema):
                walk(value, f"{where}[{i}]")

    for tool in tools:
        schema = getattr(tool, "input_schema", None) or tool.inputSchema
        walk(schema, tool.name)
    assert numbers >= 1 and missing == []


# CLI flags whose value passes through a model field that bounds it (one line, exit 2);
# every other numeric flag declares max= itself.
FLAG_FIELDS = {
    "--limit": "veracity.core.config.RunConfig.limit",
    "--seed": "veracity.core.config.RunConfig.seed",
    "--sample-per-class": "veracity.core.config.RunConfig.sample_per_class",
    "--repeats": "veracity.core.config.RunConfig.repeats",
    "--concurrency": "veracity.core.config.RunConfig.concurrency",
    "--threads": "veracity.core.config.LLMConfig.n_threads",
    "--workers": "veracity.evaluation.ray_engine.RayOptions.workers",
    "--llm-limit": "veracity.evaluation.ray_engine.RayOptions.llm_limit",
    "--max-sentences": "veracity.evidence.claims.ExtractionConfig.max_sentences",
    "--dedupe-threshold": "veracity.evidence.claims.ExtractionConfig.dedupe_threshold",
    "--chunk-words": "veracity.retrieval.local.index.ChunkingConfig.max_words",
    "--overlap": "veracity.retrieval.local.index.ChunkingConfig.overlap",
    "--top-k": "veracity.retrieval.local.corpus.LocalCorpusConfig.rrf_depth",
    "--port": "veracity.server.settings.ServerSettings.port",
    "--queue-size": "veracity.server.settings.ServerSettings.queue_size",
    "--rate-per-minute": "veracity.server.settings.ServerSettings.rate_per_minute",
    "--retention-days": "veracity.server.settings.ServerSettings.retention_days",
    "--retention-mb": "veracity.server.settings.ServerSettings.retention_mb",
    "--n": "veracity.evaluation.advfact.BuildOptions.n",
    "--passages": "veracity.evaluation.advfact.BuildOptions.passages_per_claim",
}


def _cli_numeric_flags() -> list[tuple[str, str, Any]]:
    import typer

    from veracity.cli import app

    group = typer.main.get_command(app)
    ctx = group.make_context("veracity", ["methods"], resilient_parsing=True)
    found = []

    def walk(command: Any, path: str) -> None:
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), f"{path} {name}")
            return
        for param in command.params:
            kind = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            if kind in (int, float):
                found.append((path, param.opts[0], param))

    walk(group, "veracity")
    return found


def test_every_numeric_cli_flag_has_a_maximum():
    bounded = dict(numeric_fields())
    flags = _cli_numeric_flags()
    missing = []
    for command, flag, param in flags:
        if getattr(param, "max", None) is not None:
            continue
        field = FLAG_FIELDS.get(flag)
        if field is None or not bounded.get(field):
            missing.append(f"{command} {flag}")
    assert len(flags) > 20 and missing == []


# ------------------------------------------------------------------------- the probes

REST_PROBES = [
    ("extraction.max_tokens 1e12", {"extraction": {"max_tokens": 1e12}}, "max_tokens"),
    ("extraction.context_chars huge", {"extraction": {"context_chars": HUGE}}, "context_chars"),
    ("extraction.max_sentences huge", {"extraction": {"max_sentences": HUGE}}, "max_sentences"),
    ("extraction.max_claim_chars huge", {"extraction": {"max_claim_chars": HUGE}}, "claim_chars"),
    ("extraction.temperature 1e12", {"extraction": {"temperature": 1e12}}, "temperature"),
    ("extraction.dedupe_threshold 1e12", {"extraction": {"dedupe_threshold": 1e12}}, "dedupe"),
    ("method_config.temperature 1e12", {"method_config": {"temperature": 1e12}}, "temperature"),
    ("claim evidence score 1e300", {"claim_score": 1e300}, "score"),
]


def _rest_body(extra: dict[str, Any]) -> dict[str, Any]:
    if "claim_score" in extra:
        evidence = [{"id": "e1", "text": "Rome is in Italy.", "score": extra["claim_score"]}]
        return {"input": {"kind": "claim", "text": "Rome is in Italy.", "evidence": evidence},
                "method": "cot"}  # fmt: skip
    if "method_config" in extra:
        return {"input": {"kind": "claim", "text": "Rome is in Italy."}, "method": "cot", **extra}
    return {"input": {"kind": "document", "text": DOCUMENT}, "method": "cot", **extra}


def _wait(client: httpx.Client, job_id: str) -> dict[str, Any]:
    for _ in range(600):
        job = client.get(f"/v1/checks/{job_id}").json()
        if job["status"] in ("done", "error", "failed", "cancelled"):
            return job
        time.sleep(0.05)
    return job


@pytest.mark.server
def test_rest_refuses_huge_numbers_at_submit_time(tmp_path, capsys):
    tally = Tally()
    settings = ServerSettings(data_dir=tmp_path / "srv", rate_per_minute=0,
                              allow_method_config=True)  # fmt: skip
    app_ = create_app(settings, run_config=RunConfig(method="cot"), llm=schema_llm())
    with (
        BackgroundServer(app_) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        for name, extra, field in REST_PROBES:
            tally.tried += 1
            reply = client.post("/v1/checks", json=_rest_body(extra))
            if reply.status_code >= 500:
                tally.crashed.append(f"{name}: {reply.status_code}")
            elif reply.status_code == 422 and field in json.dumps(reply.json()):
                tally.clear += 1
            elif reply.status_code == 202:
                job = _wait(client, reply.json()["id"])
                where = tally.crashed if job["status"] != "done" else tally.silent
                where.append(f"{name}: accepted, then {job['status']}: {job.get('error')}")
            else:
                tally.silent.append(f"{name}: {reply.status_code} {reply.text[:200]}")
    with capsys.disabled():
        print("\n" + tally.line("numeric bounds, REST"))
    tally.assert_clean()


MCP_PROBES = [
    ("check_document extraction.max_tokens 1e12", "check_document",
     {"text": DOCUMENT, "method": "cot", "extraction": {"max_tokens": 1e12}}, "max_tokens"),
    ("check_document extraction.context_chars huge", "check_document",
     {"text": DOCUMENT, "method": "cot", "extraction": {"context_chars": HUGE}}, "context_chars"),
    ("check options.temperature 1e12", "check",
     {"text": "Rome is in Italy.", "method": "cot", "options": {"temperature": 1e12}},
     "temperature"),
    ("search_evidence top_k huge", "search_evidence", {"query": "Rome", "top_k": HUGE}, "top_k"),
]  # fmt: skip


async def test_mcp_tools_refuse_huge_numbers_with_the_reason(capsys):
    tally = Tally()
    async with Client(build_server(RunConfig(method="cot"), llm=schema_llm())) as client:
        for name, tool, arguments, field in MCP_PROBES:
            tally.tried += 1
            try:
                result = await client.call_tool(tool, arguments)
            except MCPError as exc:  # INVALID_PARAMS naming the argument
                if field in exc.message:
                    tally.clear += 1
                else:
                    tally.crashed.append(f"{name}: {exc.message[:200]}")
                continue
            text = " ".join(getattr(c, "text", "") for c in result.content)
            if result.is_error and field in text and "Traceback" not in text:
                tally.clear += 1
            elif result.is_error:
                tally.crashed.append(f"{name}: {text[:200]}")
            else:
                tally.silent.append(f"{name}: accepted")
    with capsys.disabled():
        print("\n" + tally.line("numeric bounds, MCP"))
    tally.assert_clean()


def _liar(root: Path) -> Path:
    from .conftest import write_liar

    return write_liar(root, 6)


CLI_PROBES = [
    ("eval --concurrency 1000000000", ["--concurrency", "1000000000"], "concurrency"),
    ("eval --limit huge", ["--limit", str(HUGE)], "limit"),
    ("eval --repeats huge", ["--repeats", str(HUGE)], "repeats"),
    ("eval --threads huge", ["--threads", str(HUGE)], "n_threads"),
    ("eval run file method_config.max_tokens 1e12",
     ["FILE", "method_config: {max_tokens: 1.0e+12}"], "max_tokens"),
    ("eval run file limits.text_chars 1e15", ["FILE", "limits: {text_chars: 1.0e+15}"],
     "text_chars"),
    ("eval run file llm.n_ctx 1e12", ["FILE", "llm: {backend: embedded, n_ctx: 1.0e+12}"], "n_ctx"),
]  # fmt: skip


def test_cli_refuses_huge_numbers_with_one_line_and_exit_2(tmp_path, capsys):
    tally = Tally()
    data = _liar(tmp_path / "data")
    for i, (name, args, field) in enumerate(CLI_PROBES):
        tally.tried += 1
        if args[0] == "FILE":
            run_file = tmp_path / f"run{i}.yaml"
            run_file.write_text(f"method: cot\ndataset: liar\n{args[1]}\n", encoding="utf-8")
            args = ["--config", str(run_file)]
        command = ["eval", "-m", "cot", "-d", "liar", "--limit", "2", *args,
                   "--out", str(tmp_path / f"out{i}"), "--no-progress"]  # fmt: skip
        try:
            done = run_cli(command, tmp_path / "home", timeout=60,
                           VERACITY_DATA_DIR=str(data), VERACITY_BASE_URL="http://127.0.0.1:9",
                           VERACITY_MODEL="m")  # fmt: skip
        except Exception as exc:  # a hang
            tally.crashed.append(f"{name}: {type(exc).__name__}")
            continue
        text = (done.stdout + done.stderr).decode(errors="replace").strip()
        lines = text.splitlines()
        if done.returncode == 2 and len(lines) == 1 and field in text and "Traceback" not in text:
            tally.clear += 1
        elif "Traceback" in text or "errors.pydantic.dev" in text or "int32" in text:
            tally.crashed.append(f"{name}: the run started, then failed: {text[-200:]}")
        elif done.returncode not in (0, 1, 2):
            tally.crashed.append(f"{name}: exit {done.returncode}: {text[-200:]}")
        else:
            tally.silent.append(f"{name}: exit {done.returncode}: {text[-200:]}")
    with capsys.disabled():
        print("\n" + tally.line("numeric bounds, CLI and run files"))
    tally.assert_clean()


def test_a_run_config_refuses_huge_numbers_at_validation():
    from veracity.runtime import resolve_spec

    with pytest.raises(ConfigError, match="max_tokens"):
        resolve_spec(RunConfig(method="cot", method_config={"max_tokens": 1e12}))
    for section, values in [
        ("limits", {"text_chars": 1e15}),
        ("limits", {"chars_per_token": float("inf")}),
        ("llm", {"max_concurrency": HUGE}),
        ("llm", {"prices": {"m": [1e300, 1.0]}}),
    ]:
        with pytest.raises(ValidationError, match=next(iter(values))):
            RunConfig(method="cot", **{section: values})
    with pytest.raises(ValidationError, match="concurrency"):
        RunConfig(method="cot", concurrency=1_000_000_000)


def test_max_tokens_beyond_the_model_window_is_refused_when_the_run_is_built():
    """The shared cap lets 32,768 through; a model with an 8,192-token window cannot
    give that many, and the run says so before any check (the backend knows its window)."""
    from veracity.runtime import build_run, resolve_spec

    llm = schema_llm()
    assert llm.capabilities.context_window == 8192
    with pytest.raises(ConfigError, match=r"max_tokens is 9,000 tokens.*8,192"):
        cfg = RunConfig(method="cot", method_config={"max_tokens": 9000})
        build_run(resolve_spec(cfg), llm=llm)
    cfg = RunConfig(method="cot", method_config={"max_tokens": 4000})
    build_run(resolve_spec(cfg), llm=schema_llm())
