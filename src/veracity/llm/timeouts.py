"""Per-request time limits that follow a backend's measured speed.

A fixed limit is wrong both ways: a long reply from a busy local server needs minutes,
while a hung request to a fast API should fail in seconds. `RequestTimer` sets each
request's limit from its size (``max_tokens`` plus the prompt) and the seconds per token
the backend has actually taken so far:

    limit = base_s + factor × seconds_per_token × (max_tokens + PROMPT_WEIGHT × prompt_tokens)

The estimate moves up at once when a reply comes back slower (or a request times out)
and drifts down slowly when replies are faster, so a burst of load lengthens the limits
before it can throw work away. A fixed ``timeout_s`` turns the scaling off.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from veracity.llm.base import LLMRequest, LLMResponse

# Reading a prompt token costs a fraction of generating one (prompts are processed in
# batches); 0.1 is on the slow side for llama.cpp on a CPU and generous for hosted APIs.
PROMPT_WEIGHT = 0.1
_CHARS_PER_TOKEN = 4  # rough; only sizes the prompt's share of the limit


@dataclass(frozen=True)
class TimeoutPolicy:
    """How request time limits are set.

    Attributes:
        fixed_s: a fixed limit in seconds for every request; None scales the limit.
        base_s: allowance for connecting, queueing and the first token.
        factor: headroom over the speed measured so far.
        initial_tokens_per_s: assumed speed until the first reply is measured (slow on
            purpose: a first limit that is too long costs nothing unless the request hangs).
        max_s: no scaled limit is longer than this.
    """

    fixed_s: float | None = None
    base_s: float = 30.0
    factor: float = 4.0
    initial_tokens_per_s: float = 5.0
    max_s: float = 3600.0

    def __post_init__(self) -> None:
        if self.fixed_s is not None and self.fixed_s <= 0:
            raise ValueError("timeout_s must be positive")
        if self.base_s < 0 or self.factor < 1 or self.initial_tokens_per_s <= 0:
            raise ValueError("base_s ≥ 0, factor ≥ 1 and initial_tokens_per_s > 0 are needed")


def prompt_tokens_estimate(request: LLMRequest) -> int:
    """A rough token count of the request's messages (4 characters per token)."""
    chars = sum(len(m.content) for m in request.messages)
    return chars // _CHARS_PER_TOKEN + 4 * len(request.messages)


class RequestTimer:
    """Time limits for one backend, learnt from its replies (thread-safe)."""

    def __init__(self, policy: TimeoutPolicy | None = None):
        self.policy = policy or TimeoutPolicy()
        self._lock = threading.Lock()
        self._seconds_per_token = 1.0 / self.policy.initial_tokens_per_s
        self.measured = False  # whether any reply has been timed yet

    @property
    def seconds_per_token(self) -> float:
        return self._seconds_per_token

    @staticmethod
    def _work(max_or_done_tokens: int, prompt_tokens: int) -> float:
        return max(1.0, max_or_done_tokens + PROMPT_WEIGHT * prompt_tokens)

    def limit(self, request: LLMRequest) -> float:
        """Seconds this request may take."""
        p = self.policy
        if p.fixed_s is not None:
            return p.fixed_s
        work = self._work(request.max_tokens, prompt_tokens_estimate(request))
        return round(min(p.max_s, p.base_s + p.factor * self._seconds_per_token * work), 1)

    def observe(self, response: LLMResponse, latency_s: float) -> None:
        """Learn from a finished reply."""
        u = response.usage
        if latency_s <= 0 or (u.completion_tokens <= 0 and u.prompt_tokens <= 0):
            return
        self._update(latency_s / self._work(u.completion_tokens, u.prompt_tokens))

    def timed_out(self, request: LLMRequest, limit_s: float) -> None:
        """Learn from a request that did not finish within `limit_s`: the next limit for a
        request of the same size is at least twice as long."""
        if self.policy.fixed_s is not None:
            return
        work = self._work(request.max_tokens, prompt_tokens_estimate(request))
        self._update(2 * limit_s / (self.policy.factor * work))

    def _update(self, seconds_per_token: float) -> None:
        with self._lock:
            if seconds_per_token > self._seconds_per_token or not self.measured:
                self._seconds_per_token = seconds_per_token  # slower: follow at once
            else:
                self._seconds_per_token = 0.8 * self._seconds_per_token + 0.2 * seconds_per_token
            self.measured = True
