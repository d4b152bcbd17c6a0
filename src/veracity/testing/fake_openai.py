"""A fake OpenAI-compatible chat-completions server on loopback, with fault injection.

`FakeOpenAIServer` is a real HTTP server (a thread of this process, 127.0.0.1, a free
port) that speaks ``POST /v1/chat/completions`` in the OpenAI wire format, so the real
`OpenAICompatLLM` client, its retries and the caches are exercised end to end. Replies
come from a responder (by default `SchemaResponder`, which satisfies any JSON schema).

Faults are injected at a rate per class (`FAULTS`), from a seeded generator: transport
faults (a dropped connection, a stall past the client's timeout), HTTP errors (429, 500,
503), bodies that are not JSON or not UTF-8, and 200 answers of the wrong shape
(``choices: ["oops"]``, a NaN or non-numeric log-probability, a token without text, ...).
Every injected fault is counted in `injected`, every request body kept in `requests`.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from veracity.testing.fake_replies import SchemaResponder

Responder = Callable[[Mapping[str, Any]], str]

FAULTS: tuple[str, ...] = (
    "http_429", "http_500", "http_503", "drop", "stall", "not_json", "bad_utf8",
    "choices_str", "choices_null", "choices_empty", "message_str", "logprob_nan",
    "logprob_abc", "logprob_1000", "missing_token", "logprobs_content_str", "content_int",
)  # fmt: skip
"""Every fault class the server can inject."""

_BAD_BODIES: dict[str, Any] = {
    "choices_str": {"choices": ["oops"]},
    "choices_null": {"choices": [None]},
    "choices_empty": {"choices": []},
    "message_str": {"choices": [{"message": "hello", "finish_reason": "stop"}]},
    "content_int": {"choices": [{"message": {"content": 7}, "finish_reason": "stop"}]},
}


def _tokens(text: str) -> list[dict[str, Any]]:
    """OpenAI-style logprob entries for `text`: one per word, each certain."""
    import re

    pieces = re.findall(r"\s*[\w.-]+|\s*[^\w\s]|\s+", text) or [text]
    return [
        {"token": p, "logprob": 0.0, "top_logprobs": [{"token": p, "logprob": 0.0}]} for p in pieces
    ]


def completion(text: str, body: Mapping[str, Any], model: str = "fake-model") -> dict[str, Any]:
    """A well-formed chat-completion body answering `body` with `text`."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": "stop",
    }
    if body.get("logprobs"):
        choice["logprobs"] = {"content": _tokens(text)}
    prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or []) // 4
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": prompt, "completion_tokens": max(1, len(text) // 4)},
    }


def _broken_logprobs(fault: str, good: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"token": "x", "logprob": -0.1}
    if fault == "logprob_nan":
        entry["logprob"] = float("nan")
    elif fault == "logprob_abc":
        entry["logprob"] = "abc"
    elif fault == "logprob_1000":
        entry["logprob"] = 1000
    elif fault == "missing_token":
        del entry["token"]
    content: Any = "abc" if fault == "logprobs_content_str" else [entry]
    good["choices"][0]["logprobs"] = {"content": content}
    return good


class FakeOpenAIServer:
    """The server; use as a context manager (``with FakeOpenAIServer() as server:``).

    Args:
        responder: reply text for a request body (default: `SchemaResponder()`).
        faults: fault class -> probability per request (see `FAULTS`).
        seed: seed of the fault generator.
        stall_s: how long a ``stall`` fault keeps the client waiting.
        api_key: when set, requests without ``Authorization: Bearer <api_key>`` get 401.
        delay_s: a pause before every answer (to keep requests in flight).
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        faults: Mapping[str, float] | None = None,
        seed: int = 0,
        stall_s: float = 3.0,
        api_key: str | None = None,
        delay_s: float = 0.0,
    ):
        unknown = set(faults or {}) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault classes {sorted(unknown)}; known: {FAULTS}")
        self.responder = responder or SchemaResponder()
        self.faults = dict(faults or {})
        self.stall_s = stall_s
        self.api_key = api_key
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []  # each request's path with its query string
        self.injected: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL to give the client (``http://127.0.0.1:PORT/v1``)."""
        if self._server is None:
            raise RuntimeError("the server is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def draw_fault(self) -> str | None:
        """The fault to inject into the next answer, if any (one draw per class)."""
        with self._lock:
            for name, rate in self.faults.items():
                if self._rng.random() < rate:
                    self.injected[name] += 1
                    return name
        return None


def _route(path: str) -> str:
    """A request path without its query string or a trailing "/"."""
    return path.split("?", 1)[0].rstrip("/")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_GET(self) -> None:
        given = self.headers.get("Authorization") or ""
        if self.fake.api_key and given != f"Bearer {self.fake.api_key}":
            self._send(401, {"error": {"message": "invalid credentials"}})
        elif _route(self.path).endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        fake = self.fake
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, {"error": {"message": "request body is not JSON"}})
            return
        with fake._lock:
            fake.requests.append(body)
            fake.headers.append(dict(self.headers))
            fake.paths.append(self.path)
        if not _route(self.path).endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        given = self.headers.get("Authorization") or ""
        if fake.api_key and given != f"Bearer {fake.api_key}":
            # like some providers, echo what was sent: the client must scrub it
            self._send(401, {"error": {"message": f"invalid credentials: {given}"}})
            return
        if fake.delay_s:
            time.sleep(fake.delay_s)
        self._answer(fake.draw_fault(), body)

    def _answer(self, fault: str | None, body: dict[str, Any]) -> None:
        fake = self.fake
        if fault == "drop":
            self.close_connection = True
            self.connection.close()
            return
        if fault == "stall":
            time.sleep(fake.stall_s)
        if fault in ("http_429", "http_500", "http_503"):
            code = int(fault.rsplit("_", 1)[1])
            headers = {"Retry-After": "0"} if code == 429 else {}
            self._send(code, {"error": {"message": f"injected {code}"}}, headers)
            return
        if fault == "not_json":
            self._raw(200, b"<html>upstream proxy error</html>", "text/html")
            return
        if fault == "bad_utf8":
            self._raw(200, b'{"choices": [{"message": {"content": "\xff\xfe"}}]}')
            return
        if fault in _BAD_BODIES:
            self._send(200, _BAD_BODIES[fault])
            return
        good = completion(fake.responder(body), body, str(body.get("model") or "fake-model"))
        if fault is not None and fault.startswith(("logprob", "missing_token")):
            good = _broken_logprobs(fault, good)
        self._send(200, good)

    def _send(self, code: int, data: Any, headers: Mapping[str, str] | None = None) -> None:
        # json.dumps writes NaN for a float('nan'): exactly the broken body we want
        self._raw(code, json.dumps(data).encode(), "application/json", headers)

    def _raw(
        self,
        code: int,
        payload: bytes,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
            pass
