"""EmbeddedLLM without llama.cpp: payloads and error mapping with a stand-in server."""

import pytest

from veracity.llm.base import LLMRequest, LLMRequestError, LLMServerError, user
from veracity.llm.embedded import EmbeddedLLM


class FakeServer:
    """Streams `reply` (a chat-completion body) as llama.cpp does: a role chunk, one chunk
    per content piece, a finish chunk and a usage chunk; raises `reply` if it is one."""

    def __init__(self, reply):
        self.reply = reply
        self.bodies = []

    def handle_chat_completions(self, body, callback):
        self.bodies.append(body)
        if isinstance(self.reply, Exception):
            raise self.reply
        if "error" in self.reply:
            callback(self.reply)
            return
        choice = self.reply["choices"][0]
        text = choice["message"]["content"]
        chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]}]
        chunks += [{"choices": [{"index": 0, "delta": {"content": c}}]} for c in text]
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        chunks.append({"choices": [], "usage": self.reply["usage"], "model": self.reply["model"]})
        for chunk in chunks:
            if callback(chunk):
                return


def _llm(tmp_path, reply):
    llm = EmbeddedLLM(str(tmp_path / "m.gguf"), models_dir=tmp_path)
    llm._server = FakeServer(reply)
    return llm


OK = {
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 4, "completion_tokens": 1},
    "model": "/path/m.gguf",
}


async def test_payload_includes_schema_logprobs_and_seed(tmp_path):
    llm = _llm(tmp_path, OK)
    resp = await llm.complete(
        LLMRequest(
            messages=[user("q")],
            json_schema={"type": "object"},
            logprobs=True,
            top_logprobs=3,
            seed=1,
            stop=["x"],
        )
    )
    body = llm._server.bodies[0]
    assert body["grammar"].startswith("%llguidance")  # the schema, as llguidance reads it
    assert "response_format" not in body
    assert body["logprobs"] is True and body["top_logprobs"] == 3
    assert body["seed"] == 1 and body["stop"] == ["x"]
    assert "repeat_penalty" not in body  # logprobs are read: they must match the choice
    plain = llm.payload(LLMRequest(messages=[user("q")], seed=1))
    assert plain["repeat_penalty"] == 1.1 and plain["seed"] == 1
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert resp.text == "hi" and resp.model == "m" and resp.usage.prompt_tokens == 4


async def test_server_error_dict_becomes_request_error(tmp_path):
    llm = _llm(
        tmp_path, {"error": {"code": 400, "message": "the request exceeds the context size"}}
    )
    with pytest.raises(LLMRequestError, match="exceeds the context") as err:
        await llm.complete(LLMRequest(messages=[user("q")]))
    assert "n_ctx: 16384" in str(err.value)  # says how to raise the context


async def test_crash_becomes_server_error(tmp_path):
    llm = _llm(tmp_path, RuntimeError("segfault-ish"))
    with pytest.raises(LLMServerError, match="segfault-ish"):
        await llm.complete(LLMRequest(messages=[user("q")]))


def test_capabilities_report_context_window(tmp_path):
    llm = EmbeddedLLM("smollm2-135m", models_dir=tmp_path, n_ctx=4096)
    caps = llm.capabilities
    assert caps.json_schema and caps.logprobs and caps.context_window == 4096
    assert caps.slot_cache  # llama.cpp: a prompt is reused by the slot that holds it
    assert llm.backend_id == "embedded:smollm2-135m:rp1.1"
    plain = EmbeddedLLM("smollm2-135m", models_dir=tmp_path, repeat_penalty=1.0)
    assert plain.backend_id == "embedded:smollm2-135m"
    with pytest.raises(ValueError, match="repeat_penalty"):
        EmbeddedLLM("smollm2-135m", models_dir=tmp_path, repeat_penalty=0)


def test_each_parallel_slot_gets_a_full_context(tmp_path, monkeypatch):
    import xllamacpp

    seen = {}

    class CapturingServer:
        def __init__(self, params):
            seen.update(n_ctx=params.n_ctx, n_parallel=params.n_parallel, unified=params.kv_unified)

    monkeypatch.setattr(xllamacpp, "Server", CapturingServer)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    EmbeddedLLM(str(model), models_dir=tmp_path, n_ctx=4096, n_parallel=3).load()
    assert seen == {"n_ctx": 4096 * 3, "n_parallel": 3, "unified": False}


@pytest.mark.parametrize(
    ("provider", "base_url", "field"),
    [
        ("llamacpp", None, "repeat_penalty"),
        (None, "http://127.0.0.1:8080/v1", "repeat_penalty"),  # a server on this machine
        ("vllm", None, "repetition_penalty"),
        ("openai", None, None),  # hosted APIs reject fields they do not know
        (None, "https://proxy.example.com/v1", None),
    ],
)
def test_an_endpoint_gets_the_embedded_models_sampling_body(tmp_path, provider, base_url, field):
    from veracity.llm.openai_compat import OpenAICompatLLM

    request = LLMRequest(messages=[user("q")], json_schema={"type": "object"}, seed=7)
    embedded = _llm(tmp_path, OK).payload(request)
    http_llm = OpenAICompatLLM(
        "m", provider=provider, base_url=base_url, api_key="k", repeat_penalty=1.1
    )
    http = http_llm.payload(request)
    assert http.pop("model") == "m"
    if field is None:
        assert embedded.pop("repeat_penalty") == 1.1
        assert http == embedded
    else:
        assert http.pop(field) == embedded.pop("repeat_penalty") == 1.1
        assert http == embedded  # the same messages, schema, seed
    # a request whose probabilities are read gets no penalty from either
    scored = request.model_copy(update={"logprobs": True, "top_logprobs": 3})
    assert {**http_llm.payload(scored), "model": None} == {
        **_llm(tmp_path, OK).payload(scored),
        "model": None,
    }


def test_the_sampling_settings_are_part_of_the_cache_identity():
    from veracity.llm.openai_compat import OpenAICompatLLM

    url = "http://127.0.0.1:8080/v1"
    plain = OpenAICompatLLM("m", base_url=url, repeat_penalty=1.0).backend_id
    penalised = OpenAICompatLLM("m", base_url=url, repeat_penalty=1.1).backend_id
    assert penalised == plain + ":rp1.1"
