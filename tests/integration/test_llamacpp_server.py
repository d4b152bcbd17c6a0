"""The OpenAI-compatible client against a real llama.cpp HTTP server on loopback.

The server is llama.cpp's own (`xllamacpp.Server` with a port), serving the embedded
default model: software we did not write, speaking the API as a real endpoint does.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import httpx
import pytest

from veracity.llm.base import LLMRequest, LLMTimeout, user
from veracity.llm.openai_compat import OpenAICompatLLM

pytestmark = [pytest.mark.embedded, pytest.mark.server]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llamacpp_url(real_models_dir_module):
    import xllamacpp as xlc

    port = _free_port()
    params = xlc.CommonParams()
    params.model.path = str(real_models_dir_module / "SmolLM2-135M-Instruct.Q4_1.gguf")
    params.n_ctx = 2048
    params.n_parallel = 2
    params.cpuparams.n_threads = 1
    params.cpuparams.poll = 0
    params.verbosity = -1
    params.port = port
    params.hostnames = ["127.0.0.1"]
    params.model_alias = {"smollm2-135m"}
    server = xlc.Server(params)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):  # the HTTP side answers /health once the model is loaded
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    yield f"{url}/v1"
    del server


@pytest.fixture(scope="module")
def real_models_dir_module() -> Path:
    # module scope runs before the per-test VERACITY_HOME of conftest; same rule as there
    home = Path(os.environ.get("VERACITY_HOME", Path.home() / ".cache" / "veracity"))
    return Path(os.environ.get("VERACITY_MODELS_DIR") or home / "models")


async def test_measured_speed_sets_the_next_limit(llamacpp_url):
    llm = OpenAICompatLLM("smollm2-135m", base_url=llamacpp_url, provider=None)
    assert llm.capabilities.local
    before = llm.timer.limit(LLMRequest(messages=[user("x")], max_tokens=256))
    reply = await llm.complete(LLMRequest(messages=[user("Name a colour.")], max_tokens=16))
    assert reply.text and reply.usage.completion_tokens > 0
    assert llm.timer.measured
    after = llm.timer.limit(LLMRequest(messages=[user("x")], max_tokens=256))
    assert after != before  # the limit now follows this server's speed, not the guess


async def test_a_request_past_its_limit_is_a_local_timeout(llamacpp_url):
    llm = OpenAICompatLLM("smollm2-135m", base_url=llamacpp_url, timeout_s=0.05)
    request = LLMRequest(messages=[user("Write a long story about the sea.")], max_tokens=400)
    with pytest.raises(LLMTimeout) as info:
        await llm.complete(request)
    assert info.value.local and info.value.timeout_s == 0.05


async def test_the_same_model_answers_alike_in_process_and_behind_the_server(
    llamacpp_url, real_models_dir_module
):
    # both backends build the body with chat_payload, repeat penalty and seed included,
    # so a greedy answer does not depend on where the model runs
    from veracity.llm.embedded import EmbeddedLLM

    request = LLMRequest(
        messages=[user("List three numbers, each followed by a comma.")],
        max_tokens=40,
        seed=3,
    )
    http = OpenAICompatLLM("smollm2-135m", base_url=llamacpp_url, repeat_penalty=1.3)
    embedded = EmbeddedLLM(
        "smollm2-135m",
        models_dir=real_models_dir_module,
        n_ctx=2048,
        n_threads=1,
        auto_pull=False,
        repeat_penalty=1.3,
    )
    assert http.payload(request)["repeat_penalty"] == 1.3
    served, local = await http.complete(request), await embedded.complete(request)
    assert served.text == local.text
    plain = await OpenAICompatLLM(
        "smollm2-135m", base_url=llamacpp_url, repeat_penalty=1.0
    ).complete(request)
    assert plain.text != served.text  # the penalty reaches the server and changes replies


async def test_with_its_slot_count_calls_started_together_share_one_prefill(llamacpp_url):
    import asyncio

    shared = "Log: " + " ".join(f"step {i} moved crate {3 * i} to bay {i % 7}." for i in range(30))
    pair = [
        LLMRequest(messages=[user(f"{shared}\nYou are the {who}. One word.")], max_tokens=4)
        for who in ("porter", "foreman")
    ]
    llm = OpenAICompatLLM("smollm2-135m", base_url=llamacpp_url, slots=2)
    replies = await asyncio.gather(*(llm.complete(r) for r in pair))
    reused = sorted(r.usage.cached_prompt_tokens or 0 for r in replies)
    assert replies[0].usage.prompt_tokens > 250
    assert reused[1] >= 0.8 * replies[1].usage.prompt_tokens  # one waited and reused
    assert llm.slots is not None and llm.slots.stats.waited == 1
    with pytest.raises(ValueError, match=r"only a llama\.cpp server"):
        OpenAICompatLLM("gpt-4o-mini", provider="openai", slots=2)
