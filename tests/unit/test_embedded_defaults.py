"""Embedded-backend defaults for a shared machine, and how users override them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.config import LLMConfig
from veracity.core.errors import ConfigError
from veracity.llm.embedded import DEFAULT_PARALLEL, DEFAULT_POLL, EmbeddedLLM, default_threads
from veracity.llm.factory import build_backend
from veracity.runtime import layered_config, resolve_llm
from veracity.runtime.environment import environment


def test_default_threads_leave_half_the_cores():
    assert [default_threads(n) for n in (1, 2, 3, 4, 16)] == [1, 1, 1, 2, 8]


def test_config_defaults_are_the_backend_defaults():
    opts = resolve_llm(LLMConfig()).options  # the defaults live once, in EmbeddedOptions
    assert (opts.n_parallel, opts.poll, opts.n_threads) == (DEFAULT_PARALLEL, DEFAULT_POLL, None)
    assert opts.timeout_s is None  # scaled per request


def test_threads_from_the_environment_and_the_command_line(monkeypatch):
    monkeypatch.setenv("VERACITY_THREADS", "3")
    assert environment().llm_settings() == {"n_threads": 3}
    assert layered_config().llm.n_threads == 3
    assert layered_config(flags={"llm": {"n_threads": 1}}).llm.n_threads == 1
    monkeypatch.setenv("VERACITY_THREADS", "0")
    with pytest.raises(ConfigError, match="threads"):  # one line, no traceback
        layered_config()


def test_threads_flag_is_checked():
    result = CliRunner().invoke(app, ["check", "x", "--threads", "0"])
    assert result.exit_code == 2 and "--threads" in result.output


def test_llama_cpp_gets_threads_and_polling(tmp_path, monkeypatch):
    import xllamacpp

    seen = {}

    class CapturingServer:
        def __init__(self, params):
            seen.update(
                threads=(params.cpuparams.n_threads, params.cpuparams_batch.n_threads),
                poll=(params.cpuparams.poll, params.cpuparams_batch.poll),
                parallel=params.n_parallel,
            )

    monkeypatch.setattr(xllamacpp, "Server", CapturingServer)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    cfg = LLMConfig(model=str(model), n_threads=3, poll=10, n_parallel=1)
    build_backend(resolve_llm(cfg)).load()
    assert seen == {"threads": (3, 3), "poll": (10, 10), "parallel": 1}
    with pytest.raises(ValueError, match="poll"):
        EmbeddedLLM(str(model), models_dir=tmp_path, poll=101)
