"""Request time limits: scaled by size and measured speed, enforced on both backends."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from veracity.core import context
from veracity.llm.base import LLMRequest, LLMResponse, LLMTimeout, TokenUsage, user
from veracity.llm.client import ManagedLLM, RetryPolicy
from veracity.llm.embedded import EmbeddedLLM
from veracity.llm.openai_compat import OpenAICompatLLM
from veracity.llm.timeouts import RequestTimer, TimeoutPolicy


def _request(max_tokens: int = 64, text: str = "q") -> LLMRequest:
    return LLMRequest(messages=[user(text)], max_tokens=max_tokens)


def _reply(completion: int, prompt: int = 0) -> LLMResponse:
    usage = TokenUsage(prompt_tokens=prompt, completion_tokens=completion)
    return LLMResponse(text="x", usage=usage)


def test_limit_grows_with_max_tokens_and_follows_measured_speed():
    timer = RequestTimer(TimeoutPolicy(base_s=10, factor=4, initial_tokens_per_s=5))
    short, long = timer.limit(_request(16)), timer.limit(_request(512))
    assert short < long and long == pytest.approx(10 + 4 * 0.2 * (512 + 0.1 * 4), abs=0.1)
    timer.observe(_reply(100), latency_s=1.0)  # 100 tokens/s: limits shrink
    fast = timer.limit(_request(512))
    assert fast < long
    timer.observe(_reply(10), latency_s=10.0)  # 1 token/s: limits grow at once
    assert timer.limit(_request(512)) > long
    assert timer.measured


def test_a_timeout_at_least_doubles_the_next_limit_and_fixed_limits_stay():
    timer = RequestTimer()
    first = timer.limit(_request(256))
    timer.timed_out(_request(256), first)
    assert timer.limit(_request(256)) >= 2 * first
    fixed = RequestTimer(TimeoutPolicy(fixed_s=7))
    fixed.timed_out(_request(), 7)
    assert fixed.limit(_request(4096)) == 7
    with pytest.raises(ValueError):
        TimeoutPolicy(fixed_s=0)


class _SlowHandler(BaseHTTPRequestHandler):
    delays: ClassVar[list[float]] = []
    seen: ClassVar[list[dict]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        delay = self.delays.pop(0) if self.delays else 0.0
        time.sleep(delay)
        reply = {
            "model": body["model"],
            "choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2},
        }
        data = json.dumps(reply).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_server():
    _SlowHandler.delays, _SlowHandler.seen = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _SlowHandler
    server.shutdown()
    server.server_close()


@pytest.mark.server
async def test_local_endpoint_timeout_is_reported_and_retried_with_a_longer_limit(slow_server):
    url, handler = slow_server
    handler.delays = [1.0, 1.0]
    llm = OpenAICompatLLM("m", base_url=url, api_key="k")
    # tiny limits: 0.2 s plus almost nothing per token, so the first try runs out
    llm.timer = RequestTimer(TimeoutPolicy(base_s=0.2, factor=1, initial_tokens_per_s=1000))
    managed = ManagedLLM(llm, retry=RetryPolicy(max_attempts=3, base_delay_s=0, max_delay_s=0))
    with context.check_context() as ctx:
        reply = await managed.complete(_request(max_tokens=16))
    assert reply.text == "ok" and len(handler.seen) >= 2
    errors = ctx.trace.of_kind("error")
    assert errors, "the timeout must be in the trace"
    first = errors[0].data
    assert first["local"] is True and first["timeout_s"] == pytest.approx(0.2, abs=0.05)
    assert "from the start" in first["note"] and "no reply within" in first["error"]


@pytest.mark.server
async def test_fixed_limit_raises_a_typed_timeout(slow_server):
    url, handler = slow_server
    handler.delays = [2.0]
    llm = OpenAICompatLLM("m", base_url=url, api_key="k", timeout_s=0.3)
    with pytest.raises(LLMTimeout) as info:
        await llm.complete(_request())
    assert info.value.timeout_s == 0.3 and info.value.local


class _StreamingServer:
    """Streams one content chunk every `pause` seconds; records whether it was stopped."""

    def __init__(self, chunks: int, pause: float):
        self.chunks, self.pause = chunks, pause
        self.stopped = threading.Event()
        self.sent = 0

    def handle_chat_completions(self, body, callback):
        for _ in range(self.chunks):
            time.sleep(self.pause)
            self.sent += 1
            if callback({"choices": [{"index": 0, "delta": {"content": "a"}}]}):
                self.stopped.set()
                return


def _embedded(tmp_path, server, **kw) -> EmbeddedLLM:
    llm = EmbeddedLLM(str(tmp_path / "m.gguf"), models_dir=tmp_path, **kw)
    llm._server = server
    return llm


async def test_embedded_timeout_stops_generation(tmp_path):
    server = _StreamingServer(chunks=1000, pause=0.01)
    llm = _embedded(tmp_path, server, timeout_s=0.2)
    with pytest.raises(LLMTimeout) as info:
        await llm.complete(_request())
    assert info.value.local and info.value.timeout_s == 0.2
    assert await asyncio.to_thread(server.stopped.wait, 5)
    assert server.sent < server.chunks


async def test_cancelling_an_embedded_request_stops_generation(tmp_path):
    server = _StreamingServer(chunks=1000, pause=0.01)
    llm = _embedded(tmp_path, server)
    task = asyncio.create_task(llm.complete(_request()))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(server.stopped.wait, 5)
    assert server.sent < server.chunks
