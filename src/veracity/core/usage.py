"""What a check consumed (`Usage`) and which of its searches failed (`SearchFailures`).

Both are parts of a `Verdict`; `veracity.core.types` re-exports them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Usage(_Strict):
    """What a check consumed."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    # of prompt_tokens, those the server reused from its prefix cache (servers that say)
    cached_prompt_tokens: int = 0
    llm_calls: int = 0
    cached_llm_calls: int = 0
    searches: int = 0
    cached_searches: int = 0
    # searches that failed after their retries (a source or evidence tool gave up)
    failed_searches: int = 0
    cost_usd: float = 0.0
    # uncached calls to a hosted model with no known price: cost_usd leaves them out
    unpriced_llm_calls: int = 0
    wall_time_s: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> Usage:
        """Add `other` into this object (wall time excluded) and return self."""
        for name in (
            "prompt_tokens",
            "completion_tokens",
            "cached_prompt_tokens",
            "llm_calls",
            "cached_llm_calls",
            "searches",
            "cached_searches",
            "failed_searches",
            "cost_usd",
            "unpriced_llm_calls",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self


def cost_text(cost_usd: float, unpriced_calls: int = 0, digits: int = 4, currency: str = "") -> str:
    """A cost figure that says when it leaves calls out ("unknown" when it is all unknown).

    `currency` prefixes the number only (so never "$unknown").
    """
    amount = f"{currency}{cost_usd:.{digits}f}"
    if not unpriced_calls:
        return amount
    calls = f"{unpriced_calls:,} unpriced call{'s' if unpriced_calls != 1 else ''}"
    if cost_usd == 0:
        return f"cost unknown ({calls})" if currency else f"unknown ({calls})"
    return f"≥ {amount} (+ {calls})"


class SearchFailures(_Strict):
    """The searches of one check that failed after their retries.

    Stored in ``Verdict.metadata["search_failures"]`` whenever a search failed, so every
    front end can warn about it (see `Verdict.search_warning`).

    Attributes:
        failed: searches (or evidence tool calls) that failed.
        answered: searches that answered (with results or honestly empty).
        first_error: the first failure's error.
        all_failed: no search answered: the method had no retrieved evidence.
    """

    failed: int = Field(ge=1)
    answered: int = Field(ge=0)
    first_error: str | None = None
    all_failed: bool = False

    @property
    def warning(self) -> str:
        """One line saying how many searches failed, and the first error."""
        total = self.failed + self.answered
        head = (
            f"all {self.failed} searches failed"
            if self.all_failed
            else f"{self.failed} of {total} searches failed"
        )
        return f"{head}; first error: {self.first_error or 'unknown'}"
