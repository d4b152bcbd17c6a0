"""Prompt layout for prefix caching: what every call of a check shares comes first.

Serving stacks skip work on a prompt prefix they have already seen: llama.cpp keeps each
slot's KV cache (and a host-memory prompt cache) and reuses the longest matching prefix,
vLLM and SGLang cache prefixes automatically, and hosted APIs bill cached input tokens
at a fraction of the price. That only pays when the text common to all calls of a check
opens every prompt, character for character.

The **shared** layout (`SharedPrefix`, the default of the debate methods) therefore puts:

1. a system message that is the same for every call of the check: the data notice over
   every fence tag the check's prompts use (so it does not change from call to call);
2. the user message, opening with the check's material (the fenced claim and evidence,
   rendered once per check);
3. after it, what this call asks: the turn's instructions, the debate so far, and last
   the role's persona under a heading.

Untrusted text stays fenced in the user message; only our own text (the notice) is in the
system message. The **paper** layout is the templates as written: a role's persona leads
the system message, and the material sits wherever the template puts it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from veracity.core.errors import PromptError
from veracity.core.untrusted import Safe, data_notice, fence
from veracity.llm.base import Message
from veracity.prompting import render_messages, render_parts, with_system

PromptLayout = Literal["shared", "paper"]
ROLE_HEADING = "=== Your role ==="


@dataclass(frozen=True)
class SharedPrefix:
    """What every prompt of one check opens with.

    Attributes:
        material: the rendered claim and evidence block (our template around fenced data),
            the same object for every call of the check.
        tags: every fence tag the check's prompts may hold; the one data notice names them
            all, so the system message never changes between calls.
    """

    material: Safe
    tags: tuple[str, ...]

    @classmethod
    def of(cls, material: Safe, tags: Iterable[str] = ()) -> SharedPrefix:
        return cls(material, tuple(sorted(set(material.tags) | set(tags))))

    @property
    def system(self) -> str:
        return data_notice(self.tags)


def claim_prefix(
    layout: PromptLayout,
    claim: str,
    tags: Iterable[str],
    heading: str = "Claim:",
    tag: str = "claim",
) -> SharedPrefix | None:
    """The shared prefix of a method whose templates show the claim as `heading` and the
    claim fenced as `tag` (``Claim:`` then ``{{ claim | data("claim") }}``), or None for
    the paper layout. A template that does not show it so keeps its order behind the
    shared notice."""
    if layout != "shared":
        return None
    fenced = fence(claim, tag)
    return SharedPrefix.of(Safe(f"{heading}\n{fenced}", fenced.tags), tags)


def render_laid_out(
    package: str,
    name: str,
    prefix: SharedPrefix | None,
    *,
    persona_text: str = "",
    **variables: Any,
) -> list[Message]:
    """Render template `name` of `package`: shared-first when `prefix` is given, as the
    template is written (`render_messages`) when it is None.

    Args:
        persona_text: a speaker's persona; shared-first it closes the prompt under
            `ROLE_HEADING`, otherwise it leads the system message.
    """
    if prefix is None:
        return with_system(render_messages(package, name, **variables), persona_text)
    messages, used = render_parts(package, name, **variables)
    unknown = set(used) - set(prefix.tags)
    if unknown:
        raise PromptError(
            f"{package}/prompts/{name} fences {sorted(unknown)}, which the check's shared "
            f"prefix does not name ({sorted(prefix.tags)})"
        )
    return shared_first(messages, prefix, persona_text)


def shared_first(messages: list[Message], prefix: SharedPrefix, persona: str = "") -> list[Message]:
    """`messages` (without a data notice) laid out shared-first.

    The material is taken out of the user text and put at its start; the template's own
    system text and `persona` go after the call's instructions, under `ROLE_HEADING`. A
    prompt that does not hold the material once (a user's override may drop it) or that
    holds assistant turns keeps its order, behind the shared system message.
    """
    own_system = "\n\n".join(m.content for m in messages if m.role == "system")
    role_text = "\n\n".join(t for t in (persona, own_system) if t)
    role_block = f"{ROLE_HEADING}\n{role_text}" if role_text else ""
    system = Message(role="system", content=prefix.system)
    users = [m.content for m in messages if m.role == "user"]
    material = str(prefix.material)
    if any(m.role == "assistant" for m in messages) or sum(u.count(material) for u in users) != 1:
        rest = [m for m in messages if m.role != "system"]
        return [system, *([Message(role="user", content=role_block)] if role_block else []), *rest]
    bodies = []
    for text in users:
        before, found, after = text.partition(material)
        bodies.append(f"{before.strip()}\n\n{after.strip()}".strip() if found else text.strip())
    parts = [material, *bodies, role_block]
    return [system, Message(role="user", content="\n\n".join(p for p in parts if p))]
