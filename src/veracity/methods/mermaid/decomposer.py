"""MERMAID's claim decomposer φ: claim c → D_c = (G_c, k_c).

G_c is a set of knowledge triplets (subject, relation, object, attributes) and k_c the
topical keywords of the claim. The subjects and objects are the entity keys of the
evidence memory (Algorithm 1, line 4). The reply is validated against `Decomposition`;
an invalid reply is sent back with the validation error and asked again
(`complete_structured`), and a decomposition still invalid after the last try raises
`StructuredOutputError`, which the check records as its error.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from veracity.llm.base import LLM, Message
from veracity.llm.reply_schema import phrase, schema_safe
from veracity.llm.structured import complete_structured


def _clean(value: str) -> str:
    text = " ".join(value.split()).strip(" .,;:")
    if not text:
        raise ValueError("must not be empty")
    return text


class Triplet(BaseModel):
    """One atomic assertion of the claim."""

    model_config = ConfigDict(extra="forbid")

    # phrase(): the schema says what `_words` needs (a word character first), so a
    # constrained decoder cannot write a part that cleans to nothing
    subject: str = phrase(100, description="who or what the assertion is about")
    relation: str = phrase(60, description="the verb linking subject and object")
    object: str = phrase(100, description="what the subject is related to")
    attributes: list[Annotated[str, Field(max_length=60)]] = Field(
        default_factory=list,
        max_length=3,
        description="time, place, quantity or qualifier not captured above",
    )

    @field_validator("subject", "relation", "object")
    @classmethod
    @schema_safe
    def _words(cls, v: str) -> str:
        return _clean(v)

    @field_validator("attributes")
    @classmethod
    @schema_safe
    def _attributes(cls, v: list[str]) -> list[str]:
        return [" ".join(a.split()) for a in v if a and a.strip()][:3]

    def render(self) -> str:
        extra = f" [{'; '.join(self.attributes)}]" if self.attributes else ""
        return f"({self.subject}; {self.relation}; {self.object}){extra}"


class Decomposition(BaseModel):
    """D_c: the claim's triplets G_c and topic keywords k_c."""

    model_config = ConfigDict(extra="forbid")

    triplets: list[Triplet] = Field(min_length=1, max_length=4)
    topics: list[Annotated[str, phrase(40)]] = Field(
        min_length=1, max_length=3, description="topic keywords"
    )

    @field_validator("topics")
    @classmethod
    @schema_safe
    def _topics(cls, v: list[str]) -> list[str]:
        cleaned = [_clean(t) for t in v if t and t.strip()]
        if not cleaned:
            raise ValueError("give at least one topic keyword")
        return cleaned

    @property
    def entities(self) -> list[str]:
        """E_c: the subjects and objects, in order, without repeats (case-insensitive)."""
        seen: dict[str, str] = {}
        for t in self.triplets:
            for name in (t.subject, t.object):
                seen.setdefault(name.casefold(), name)
        return list(seen.values())

    def render(self) -> str:
        lines = [f"- {t.render()}" for t in self.triplets]
        lines.append(f"Topics: {', '.join(self.topics)}")
        return "\n".join(lines)


async def decompose(
    llm: LLM,
    messages: list[Message],
    *,
    tag: str,
    attempts: int = 3,
    temperature: float = 0.0,
    max_tokens: int = 400,
) -> Decomposition:
    """Ask for the decomposition of the claim in `messages` (see the module docstring).

    Raises:
        StructuredOutputError: no valid decomposition after `attempts` tries.
    """
    result = await complete_structured(
        llm,
        messages,
        Decomposition,
        attempts=attempts,
        temperature=temperature,
        max_tokens=max_tokens,
        tag=tag,
    )
    return result.value
