"""A ScriptedLLM behind a real OpenAI-compatible HTTP endpoint on 127.0.0.1, for tests that
spawn veracity in another process (``veracity mcp``) and must still control its model.

The endpoint answers ``POST /v1/chat/completions`` in the exact shape of the OpenAI
chat-completions API (choices, message, finish_reason, usage, logprobs), from the
scripted model's reply to the request as veracity's client sent it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from veracity.llm.base import LLMRequest, Message
from veracity.testing import ScriptedLLM


def _completion(llm: ScriptedLLM, body: dict) -> dict:
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    request = LLMRequest(
        messages=[Message(role=m["role"], content=m["content"]) for m in body["messages"]],
        temperature=body.get("temperature", 0.0),
        max_tokens=body.get("max_tokens", 256),
        json_schema=schema,
        logprobs=bool(body.get("logprobs")),
        top_logprobs=body.get("top_logprobs"),
    )
    response = asyncio.run(llm.complete(request))
    logprobs = None
    if body.get("logprobs") and response.logprobs:
        logprobs = {
            "content": [
                {
                    "token": t.token,
                    "logprob": t.logprob,
                    "top_logprobs": [{"token": a.token, "logprob": a.logprob} for a in t.top],
                }
                for t in response.logprobs
            ]
        }
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": response.text},
                "finish_reason": response.finish_reason or "stop",
                "logprobs": logprobs,
            }
        ],
        "usage": {
            "prompt_tokens": response.usage.prompt_tokens,
            "completion_tokens": response.usage.completion_tokens,
            "total_tokens": response.usage.prompt_tokens + response.usage.completion_tokens,
        },
    }


@contextmanager
def scripted_endpoint(llm: ScriptedLLM):
    """Serve `llm` at ``http://127.0.0.1:<port>/v1``; yields the base URL."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if not self.path.endswith("/chat/completions"):
                self.send_error(404)
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                try:
                    payload, status = _completion(llm, body), 200
                except AssertionError as exc:  # the script has no reply: a clear 400
                    payload, status = {"error": {"message": str(exc)[:500]}}, 400
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
