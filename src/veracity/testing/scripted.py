"""`ScriptedLLM`: a deterministic LLM for tests, with token logprobs.

Replies are chosen by rules (a regex or predicate on the request, optionally limited to a
trace tag), then from a FIFO queue, then from a default. A request that nothing answers
raises `ScriptExhausted` showing the prompt, so a test never passes on an unplanned call.

Each reply is split into pseudo-tokens (a word or punctuation mark with its leading
space). Every token gets log-probability 0 unless the reply names `alternatives`: then
the answer token (the first token at `at`, or the first non-blank token) gets those
alternatives as its top logprobs, exactly as an OpenAI-style backend would report them.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from veracity.llm.base import (
    Capabilities,
    LLMRequest,
    LLMResponse,
    TokenLogprob,
    TokenUsage,
    TopLogprob,
)

_TOKEN = re.compile(r"\s*[A-Za-z0-9]+|\s*[^A-Za-z0-9\s]|\s+$")


class ScriptExhausted(AssertionError):
    """The scripted model got a request that no rule, queue entry or default answers."""


@dataclass
class ScriptedReply:
    """A reply with optional token alternatives.

    Attributes:
        text: the completion text.
        alternatives: {token: probability} at the answer token; the reply's own token
            should be among them.
        at: substring of `text` where the answer token starts (default: first non-blank).
        finish_reason: reported finish reason.
    """

    text: str
    alternatives: dict[str, float] | None = None
    at: str | None = None
    finish_reason: str = "stop"


Reply = str | ScriptedReply | Callable[[LLMRequest], str | ScriptedReply]


@dataclass
class _Rule:
    match: Callable[[LLMRequest], bool]
    reply: Reply
    times: int | None
    used: int = 0


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _prompt(request: LLMRequest) -> str:
    return "\n".join(m.content for m in request.messages)


def _logprobs(reply: ScriptedReply, top_k: int) -> list[TokenLogprob]:
    text = reply.text
    offset = text.find(reply.at) if reply.at else -1
    if reply.at and offset < 0:
        raise ValueError(f"ScriptedReply.at {reply.at!r} is not in the reply text")
    tokens = tokenize(text[:offset]) + tokenize(text[offset:]) if offset > 0 else tokenize(text)
    answer_idx = None
    pos = 0
    for i, tok in enumerate(tokens):
        if (offset >= 0 and pos >= offset and tok.strip()) or (offset < 0 and tok.strip()):
            answer_idx = i
            break
        pos += len(tok)
    out = []
    for i, tok in enumerate(tokens):
        if i == answer_idx and reply.alternatives:
            alts = sorted(reply.alternatives.items(), key=lambda kv: -kv[1])[: max(top_k, 1)]
            own = reply.alternatives.get(tok, reply.alternatives.get(tok.strip(), 1e-6))
            out.append(
                TokenLogprob(
                    token=tok,
                    logprob=math.log(max(own, 1e-12)),
                    top=[TopLogprob(token=t, logprob=math.log(max(p, 1e-12))) for t, p in alts],
                )
            )
        else:
            out.append(
                TokenLogprob(
                    token=tok,
                    logprob=0.0,
                    top=[TopLogprob(token=tok, logprob=0.0)] if top_k else [],
                )
            )
    return out


@dataclass
class ScriptedLLM:
    """A scripted, deterministic `LLM`.

    Example:
        >>> llm = ScriptedLLM().on("Is the claim", '{"label": "FALSE"}')
    """

    default: Reply | None = None
    capabilities: Capabilities = field(
        default_factory=lambda: Capabilities(
            json_schema=True,
            logprobs=True,
            max_top_logprobs=20,
            seed=True,
            context_window=8192,
            local=True,
        )
    )
    model: str = "scripted"
    latency_s: float = 0.0
    calls: list[LLMRequest] = field(default_factory=list)
    _rules: list[_Rule] = field(default_factory=list)
    _queue: deque = field(default_factory=deque)

    @property
    def backend_id(self) -> str:
        return f"scripted:{self.model}"

    def on(
        self,
        pattern: str | re.Pattern | Callable[[LLMRequest], bool],
        reply: Reply,
        *,
        tag: str | None = None,
        times: int | None = None,
    ) -> ScriptedLLM:
        """Answer requests whose prompt matches `pattern` (regex search) with `reply`.

        Args:
            tag: only requests whose tag equals this or starts with ``tag + ":"``.
            times: stop matching after this many uses (None: unlimited).
        """
        if callable(pattern) and not isinstance(pattern, re.Pattern):
            pred = pattern
        else:
            rx = re.compile(pattern) if isinstance(pattern, str) else pattern
            pred = lambda r: bool(rx.search(_prompt(r)))  # noqa: E731

        def match(r: LLMRequest) -> bool:
            if tag is not None and not (r.tag == tag or r.tag.startswith(tag + ":")):
                return False
            return pred(r)

        self._rules.append(_Rule(match, reply, times))
        return self

    def queue(self, *replies: Reply) -> ScriptedLLM:
        """Answer the next unmatched requests with these replies, in order."""
        self._queue.extend(replies)
        return self

    def calls_tagged(self, tag: str) -> list[LLMRequest]:
        return [c for c in self.calls if c.tag == tag or c.tag.startswith(tag + ":")]

    def _pick(self, request: LLMRequest) -> Reply:
        for rule in self._rules:
            if rule.times is not None and rule.used >= rule.times:
                continue
            if rule.match(request):
                rule.used += 1
                return rule.reply
        if self._queue:
            return self._queue.popleft()
        if self.default is not None:
            return self.default
        raise ScriptExhausted(
            f"ScriptedLLM has no reply for request tagged {request.tag!r}:\n"
            f"{_prompt(request)[:1500]}"
        )

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls.append(request)
        reply = self._pick(request)
        if callable(reply):
            reply = reply(request)
        if isinstance(reply, str):
            reply = ScriptedReply(reply)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        logprobs = None
        if request.logprobs and self.capabilities.logprobs:
            logprobs = _logprobs(reply, request.top_logprobs or 0)
        return LLMResponse(
            text=reply.text,
            logprobs=logprobs,
            usage=TokenUsage(
                prompt_tokens=len(_prompt(request).split()),
                completion_tokens=len(tokenize(reply.text)),
            ),
            latency_s=self.latency_s,
            model=self.model,
            finish_reason=reply.finish_reason,
        )
