"""The upper bounds of the numbers a run file, a flag or a request can set.

Every number a user can set (a run file's ``method_config``, ``limits``, ``llm`` and
source options, a CLI flag, a REST request's ``extraction``, an MCP tool's arguments) has
an upper bound declared beside its field, so a value like ``max_tokens: 1e12`` or
``--concurrency 1000000000`` is refused when the config or request is validated (422 /
exit status 2 / a tool error naming the field), not when a check runs.

The bounds are generous: each is far above what any run in ``configs/`` or any method
default uses, and each is stated here once. A field keeps its own lower bound: the types
below add only the maximum (``Temperature`` is the one range every field shares), e.g.

    max_tokens: MaxTokens = Field(default=512, ge=16)
    max_input_chars: PromptChars = 4000

`tests/reliability/test_numeric_bounds.py` walks every config and request model and fails
on a number without a maximum.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import Field

# tokens one model call may generate (`veracity.llm.base.LLMRequest` allows 65,536; every
# method's default is 1,200 or less); checked again against the model's context window
# when a run is built, where the backend knows it (`check_completion_tokens`)
MAX_COMPLETION_TOKENS = 32_768
# tokens of a model's context window (the largest windows offered today: 2M)
MAX_CONTEXT_WINDOW = 2_097_152
# characters of any text a setting lets into a prompt (about 330k tokens)
MAX_PROMPT_CHARS = 1_000_000
# words of a chunk, a reasoning budget
MAX_WORDS = 100_000
# things done at once: examples, model calls, fetches, threads, workers
MAX_CONCURRENCY = 512
# attempts of one call, retries
MAX_ATTEMPTS = 100
# seconds of any timeout, delay, interval or time-to-live setting (30 days)
MAX_SECONDS = 2_592_000.0
# a seed (numpy takes seeds below 2**32)
MAX_SEED = 2**32 - 1
# examples of a run (--limit, sample_per_class), rows
MAX_EXAMPLES = 100_000_000
# repeats of a run
MAX_REPEATS = 1_000
# results, candidates, documents, keywords, sub-claims: items a step takes or keeps
MAX_ITEMS = 10_000
# rounds, iterations, steps, depth of an agent's loop
MAX_ROUNDS = 1_000
# unitless weights, rates and scales (learning rates, reward weights, BM25 k1)
MAX_WEIGHT = 1_000_000.0
# bytes of a page or a request body (1 GiB)
MAX_BYTES = 1 << 30
# US dollars per million tokens of a model's price
MAX_PRICE = 10_000.0
# requests per second a rate limit may allow
MAX_RATE = 10_000.0

MaxTokens = Annotated[int, Field(le=MAX_COMPLETION_TOKENS)]
ContextWindow = Annotated[int, Field(le=MAX_CONTEXT_WINDOW)]
PromptChars = Annotated[int, Field(le=MAX_PROMPT_CHARS)]
Words = Annotated[int, Field(le=MAX_WORDS)]
Concurrency = Annotated[int, Field(le=MAX_CONCURRENCY)]
Attempts = Annotated[int, Field(le=MAX_ATTEMPTS)]
Seconds = Annotated[float, Field(le=MAX_SECONDS, allow_inf_nan=False)]
Seed = Annotated[int, Field(le=MAX_SEED)]
Examples = Annotated[int, Field(le=MAX_EXAMPLES)]
Repeats = Annotated[int, Field(le=MAX_REPEATS)]
Items = Annotated[int, Field(le=MAX_ITEMS)]
Rounds = Annotated[int, Field(le=MAX_ROUNDS)]
Weight = Annotated[float, Field(le=MAX_WEIGHT, allow_inf_nan=False)]
Bytes = Annotated[int, Field(le=MAX_BYTES)]
Price = Annotated[float, Field(ge=0.0, le=MAX_PRICE, allow_inf_nan=False)]
Rate = Annotated[float, Field(gt=0.0, le=MAX_RATE, allow_inf_nan=False)]
# a share, probability or similarity threshold
Fraction = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
# the sampling temperature of every model call
Temperature = Annotated[float, Field(ge=0.0, le=2.0, allow_inf_nan=False)]
# a penalty on repeated tokens (1.0: off)
RepeatPenalty = Annotated[float, Field(gt=0.0, le=10.0, allow_inf_nan=False)]


def token_fields(config: Any) -> Iterable[tuple[str, int]]:
    """The completion-token settings of a config model (``max_tokens``,
    ``max_tokens_turn``, ...) and their values."""
    for name in type(config).model_fields:
        value = getattr(config, name, None)
        if name.startswith("max_tokens") and isinstance(value, int) and value > 0:
            yield name, value


def completion_tokens_problem(config: Any, window: int | None, where: str) -> str | None:
    """Why `config` asks for more completion tokens than a model with `window` tokens of
    context can give (None: it does not, or the window is unknown)."""
    if not window:
        return None
    for name, value in token_fields(config):
        if value >= window:
            return (
                f"{where}.{name} is {value:,} tokens, but the model's context window is "
                f"{window:,} tokens (the prompt needs room too); give a smaller {name}"
            )
    return None
