"""The LLM layer: protocol, backends, structured output, caching and accounting."""

from veracity.llm.base import (
    LLM,
    Capabilities,
    LLMAuthError,
    LLMError,
    LLMRateLimited,
    LLMRequest,
    LLMRequestError,
    LLMResponse,
    LLMServerError,
    LLMTimeout,
    LLMTransientError,
    Message,
    ModelNotAvailable,
    StructuredOutputError,
    TokenLogprob,
    TokenUsage,
    TopLogprob,
    assistant,
    system,
    user,
)
from veracity.llm.cache import ResponseCache
from veracity.llm.choice import ChoicePolicy, ChoiceResult, ask_choice
from veracity.llm.client import ManagedLLM, RetryPolicy
from veracity.llm.probs import ChoiceProbs, choice_probabilities, sampled_choice_probabilities
from veracity.llm.structured import Structured, complete_structured, extract_json

__all__ = [
    "LLM",
    "Capabilities",
    "ChoicePolicy",
    "ChoiceProbs",
    "ChoiceResult",
    "LLMAuthError",
    "LLMError",
    "LLMRateLimited",
    "LLMRequest",
    "LLMRequestError",
    "LLMResponse",
    "LLMServerError",
    "LLMTimeout",
    "LLMTransientError",
    "ManagedLLM",
    "Message",
    "ModelNotAvailable",
    "ResponseCache",
    "RetryPolicy",
    "Structured",
    "StructuredOutputError",
    "TokenLogprob",
    "TokenUsage",
    "TopLogprob",
    "ask_choice",
    "assistant",
    "choice_probabilities",
    "complete_structured",
    "extract_json",
    "sampled_choice_probabilities",
    "system",
    "user",
]
