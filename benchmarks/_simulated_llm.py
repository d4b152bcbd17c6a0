"""A simulated model for `documents.py --model simulated`: a loopback OpenAI-compatible
server whose replies are those of a competent claim extractor and checker, and whose
latency is what the embedded model would spend on the same request.

Replies (decided from the request's JSON schema, by its title, and the fenced input):

- ``AtomicClaims`` (sentence-mode decomposition): the fenced sentence split at " and " and
  ";" (at least one claim, in the sentence's own words, so anchoring keeps them); a
  sentence ending in "?" states no fact and gives none;
- ``SelfContainedClaims`` (decontextualisation): the claims unchanged;
- ``ClaimCategories`` (check-worthiness): every claim "factual";
- ``WindowClaims`` (window mode): for each numbered sentence the claims decomposition gives
  it, with that sentence's number and category "factual", so both roads extract the same
  claims;
- any other schema (rag's verdict): the schema-filling default of
  `veracity.testing.fake_replies.SchemaResponder`, with a fixed justification.

Cost: ``delay = prefill_s * prompt_tokens + decode_s * completion_tokens``, with tokens
counted as `veracity.testing.fake_openai.completion` reports them in ``usage`` (characters
/ 4, prompt and reply alike), so the benchmark's token columns are the ones the delay used.
Requests are served ``slots`` at a time (one by default, like the embedded backend on two
cores); the rest wait their turn.

Left out: reply quality (no mistakes, no rambling), llama.cpp's batching of parallel slots
and its prompt (prefix) cache; every prompt token is prefilled on every call.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from veracity.testing.fake_openai import FakeOpenAIServer
from veracity.testing.fake_replies import SchemaResponder, request_schema

_FENCED = r'<{tag}(?: id="(\d+)")?>\n(.*?)\n</{tag}>'
_SPLIT = re.compile(r"\s+and\s+|\s*;\s*")
JUSTIFICATION = "The passages say what the claim says, so it is taken as stated."


def split_claims(sentence: str, max_chars: int = 300, most: int = 6) -> list[str]:
    """A sentence's claims: its parts between " and " / ";" (in its own words)."""
    sentence = " ".join(sentence.split())
    if not sentence or sentence.endswith("?"):
        return []
    parts = [p.strip(" ,.") for p in _SPLIT.split(sentence)]
    parts = [p for p in parts if len(p.split()) >= 2] or [sentence]
    return [_cut(p, max_chars) for p in parts[:most]]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


def _fenced(text: str, tag: str) -> list[str]:
    return [body for _, body in re.findall(_FENCED.format(tag=tag), text, re.S)]


def _user_text(body: Mapping[str, Any]) -> str:
    messages = body.get("messages") or []
    return "\n".join(str(m.get("content") or "") for m in messages if m.get("role") != "system")


def tokens(text: str) -> int:
    """The token count `fake_openai.completion` reports for a reply (at least one)."""
    return max(1, len(text) // 4)


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """The token count `fake_openai.completion` reports for a request's prompt."""
    return sum(len(str(m.get("content") or "")) for m in body.get("messages") or []) // 4


class ExtractorResponder:
    """Reply text for a request (see the module docstring), after the simulated delay.

    Args:
        prefill_s: seconds per prompt token.
        decode_s: seconds per completion token.
        slots: requests served at once.
    """

    def __init__(self, prefill_s: float, decode_s: float, slots: int = 1):
        self.prefill_s = prefill_s
        self.decode_s = decode_s
        self._slots = threading.Semaphore(slots)
        self._fill = SchemaResponder(obey=False)
        self.kinds: dict[str, int] = {}
        self._lock = threading.Lock()

    def reply(self, body: Mapping[str, Any]) -> str:
        schema = request_schema(body) or {}
        title = str(schema.get("title") or "")
        with self._lock:
            self.kinds[title or "(none)"] = self.kinds.get(title or "(none)", 0) + 1
        user = _user_text(body)
        claims_schema = (schema.get("properties") or {}).get("claims") or {}
        most = int(claims_schema.get("maxItems") or 6)
        if title == "AtomicClaims":
            sentences = _fenced(user, "sentence")
            found = split_claims(sentences[0], most=most) if sentences else []
            return json.dumps({"claims": found})
        if title == "SelfContainedClaims":
            return json.dumps({"claims": _fenced(user, "claim")})
        if title == "ClaimCategories":
            return json.dumps({"claims": ["factual"] * len(_fenced(user, "claim"))})
        if title == "WindowClaims":
            item = (schema.get("$defs") or {}).get("WindowClaim") or {}
            categories = "category" in (item.get("properties") or {})
            found = []
            for number, sentence in enumerate(_fenced(user, "sentence"), start=1):
                for claim in split_claims(sentence):
                    found.append({"sentences": [number], "text": claim})
                    if categories:
                        found[-1]["category"] = "factual"
            return json.dumps({"claims": found[:most]})
        text = self._fill(body)
        if schema:
            value = json.loads(text)
            if isinstance(value, dict) and "reasoning" in value:
                value["reasoning"] = JUSTIFICATION
            text = json.dumps(value)
        return text

    def __call__(self, body: Mapping[str, Any]) -> str:
        text = self.reply(body)
        delay = self.prefill_s * prompt_tokens(body) + self.decode_s * tokens(text)
        with self._slots:  # one request on the model at a time (or `slots`)
            time.sleep(delay)
        return text


def simulated_server(prefill_s: float, decode_s: float, slots: int = 1) -> FakeOpenAIServer:
    """The server (not started): use as ``with simulated_server(...) as server:``."""
    return FakeOpenAIServer(ExtractorResponder(prefill_s, decode_s, slots))
