"""Run directories read deterministic replies through the user-level LLM cache."""

from __future__ import annotations

import pytest
from _eval_fixtures import scripted_llm
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core import registry
from veracity.core.config import LLMConfig
from veracity.llm.base import LLMRequest, user
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.llm.factory import build_cache
from veracity.llm.read_through import ReadThroughCache
from veracity.runtime import layered_config
from veracity.runtime.environment import environment
from veracity.testing import ScriptedLLM

runner = CliRunner()


def _request(text: str, temperature: float = 0.0) -> LLMRequest:
    return LLMRequest(messages=[user(text)], temperature=temperature)


async def test_a_new_run_reuses_what_another_run_asked(tmp_path):
    model = ScriptedLLM(default=lambda req: f"echo {req.messages[-1].content}")
    first = build_cache(
        LLMConfig(cache_mode="record"),
        tmp_path / "run1.sqlite",
        user_cache=environment().paths.llm_cache,
    )
    second = build_cache(
        LLMConfig(cache_mode="record"),
        tmp_path / "run2.sqlite",
        user_cache=environment().paths.llm_cache,
    )
    assert isinstance(first, ReadThroughCache) and isinstance(second, ReadThroughCache)

    await ManagedLLM(model, cache=first).complete(_request("a"))
    reply = await ManagedLLM(model, cache=second).complete(_request("a"))
    assert len(model.calls) == 1 and reply.cached and reply.text == "echo a"
    assert second.shared_hits == 1
    # the second run's own cache now holds the reply it used
    own = ResponseCache(tmp_path / "run2.sqlite", mode="replay")
    assert own.get(_request("a"), model.backend_id).text == "echo a"


async def test_sampled_replies_are_not_shared(tmp_path):
    model = ScriptedLLM(default=lambda req: "draw")
    for name in ("run1", "run2"):
        cache = build_cache(
            LLMConfig(cache_mode="record"),
            tmp_path / f"{name}.sqlite",
            user_cache=environment().paths.llm_cache,
        )
        await ManagedLLM(model, cache=cache).complete(_request("a", temperature=0.7))
    assert len(model.calls) == 2
    assert len(ResponseCache(environment().paths.llm_cache)) == 0


def test_opt_out_replay_and_user_cache_itself_use_one_cache(tmp_path, monkeypatch):
    own = tmp_path / "run.sqlite"
    assert isinstance(
        build_cache(LLMConfig(user_cache=False), own, user_cache=environment().paths.llm_cache),
        ResponseCache,
    )
    assert isinstance(
        build_cache(LLMConfig(cache_mode="replay"), own, user_cache=environment().paths.llm_cache),
        ResponseCache,
    )
    assert isinstance(
        build_cache(
            LLMConfig(), environment().paths.llm_cache, user_cache=environment().paths.llm_cache
        ),
        ResponseCache,
    )
    assert (
        build_cache(LLMConfig(cache_mode="off"), own, user_cache=environment().paths.llm_cache)
        is None
    )
    # no user-level cache given (nothing below runtime looks one up): the run's own, or none
    assert isinstance(build_cache(LLMConfig(), own), ResponseCache)
    assert build_cache(LLMConfig()) is None
    monkeypatch.setenv("VERACITY_USER_CACHE", "0")
    assert layered_config().llm.user_cache is False
    with pytest.raises(ValueError, match="replay"):
        ReadThroughCache(ResponseCache(own, mode="replay"), ResponseCache(tmp_path / "u"))


@pytest.fixture
def model(monkeypatch):
    """The configured (embedded) backend is a scripted model; caches are the real ones."""
    scripted = scripted_llm()
    monkeypatch.setitem(registry.llm_backends._items, "embedded", lambda cfg, progress: scripted)
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    return scripted


def _eval(tmp_path, out, *extra):
    args = ["eval", "--data-dir", str(tmp_path), "--no-progress", "--method", "direct"]
    return runner.invoke(app, [*args, "--dataset", "toy_eval", "--out", str(out), *extra])


def test_the_same_eval_into_a_new_directory_asks_nothing(tmp_path, model, monkeypatch):
    assert _eval(tmp_path, tmp_path / "run1").exit_code == 0
    assert len(model.calls) == 8
    result = _eval(tmp_path, tmp_path / "run2")
    assert result.exit_code == 0, result.output
    assert len(model.calls) == 8  # every reply came from the user-level cache
    # the new directory records every reply it used, so it replays on its own
    assert len(ResponseCache(tmp_path / "run2" / "cache" / "llm.sqlite")) == 8
    replayed = _eval(tmp_path, tmp_path / "run3", "--replay-from", str(tmp_path / "run2"))
    assert replayed.exit_code == 0, replayed.output
    assert len(model.calls) == 8

    monkeypatch.setenv("VERACITY_USER_CACHE", "0")
    assert _eval(tmp_path, tmp_path / "run4").exit_code == 0
    assert len(model.calls) == 16
