"""Test doubles shipped with the package: a scripted LLM and an in-memory source."""

from veracity.testing.encyclopedia import InMemoryEncyclopedia
from veracity.testing.scripted import ScriptedLLM, ScriptedReply, ScriptExhausted, tokenize
from veracity.testing.sources import InMemorySource

__all__ = [
    "InMemoryEncyclopedia",
    "InMemorySource",
    "ScriptExhausted",
    "ScriptedLLM",
    "ScriptedReply",
    "tokenize",
]
