"""Prompt layout: the one adapter that turns a method's prompt parts into chat messages.

A method renders *parts*, never finished message lists: a template (the call's
instructions, the debate so far, any other call-specific text), the check's **material**
(the fenced claim and evidence, rendered once per check as `Safe` text) and, for a
debater, a **persona**. A template shows the material where the paper puts it with
``{{ material }}``. One `Layout`, made once per method from its ``prompt_layout`` option
(`LayoutSetting`, declared once for every method that has it), assembles the messages:

- **paper** (`PaperLayout`): the template as written, the material where it stands, the
  data notice for the fences the prompt holds after the template's system text, and the
  persona leading the system message.
- **shared** (`SharedLayout`): what every call of a check shares comes first, so a serving
  stack's prefix cache (llama.cpp slots, vLLM, SGLang, hosted cached-input pricing) hits:
  a system message that is the same for every call (the data notice over the union of
  the method's fence tags), then the user message opening with the material, then the
  call's own text, and last the template's system text and the persona under
  `ROLE_HEADING`.

The shared layout finds the material by a slot, not by its text: the template renders
with ``material`` bound to a mark (NUL-bracketed, like the role markers of
`veracity.prompting`) that no substituted value can hold, and the user text is cut there.
A prompt whose template does not show the material exactly once, or that holds assistant
turns, is a `PromptError` under the shared layout (a prompt override that drops the
material says so instead of being laid out some other way). Every template render is also
given ``shared`` (a bool), for the few templates whose wording differs by layout.
Untrusted text stays fenced in the user message; only our own text is in the system one.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from veracity.core.errors import PromptError
from veracity.core.untrusted import MARK, Safe, data_notice, fence
from veracity.llm.base import Message
from veracity.prompting import render_parts, with_data_notice, with_system

PromptLayout = Literal["shared", "paper"]
ROLE_HEADING = "=== Your role ==="
_SLOT = Safe(f"{MARK}material{MARK}")  # the material's place in a template, when shared


class LayoutSetting(BaseModel):
    """The ``prompt_layout`` option, for the config of a method whose prompts have
    material to lay out (a method that leads with paper order overrides the default)."""

    prompt_layout: PromptLayout = Field(
        "shared",
        description="shared: the check's material first in every prompt, so a server "
        "reuses the prefix (veracity.prompt_layout); paper: the templates' order",
    )


def claim_material(claim: str, heading: str = "Claim:", tag: str = "claim") -> Safe:
    """The material of a method whose prompts show only the claim: `heading`, then the
    claim fenced as `tag`."""
    fenced = fence(claim, tag)
    return Safe(f"{heading}\n{fenced}", fenced.tags)


class Layout(ABC):
    """How the parts of a method's prompts become messages (see the module docstring).

    Args:
        tags: every fence tag the method's prompts may hold; the shared layout's one
            notice names them all, so its system message is the same for every call.
    """

    name: ClassVar[PromptLayout]
    shared: ClassVar[bool]  # templates read it as ``shared``, where their wording differs

    def __init__(self, tags: Iterable[str] = ()):
        self.tags = tuple(sorted(set(tags)))

    def messages(
        self,
        package: str,
        template: str,
        *,
        material: Safe | None = None,
        persona_text: str = "",
        **variables: Any,
    ) -> list[Message]:
        """Template `template` of `package` with `variables`, `material` and a speaker's
        `persona_text`."""
        if material is None:  # nothing shared to put first: the template as written
            rendered, used = render_parts(package, template, shared=self.shared, **variables)
            return with_system(with_data_notice(rendered, used), persona_text)
        shown = _SLOT if self.shared else material
        rendered, used = render_parts(
            package, template, material=shown, shared=self.shared, **variables
        )
        where = f"{package}/prompts/{template}"
        return self.assemble(where, rendered, used, material, persona_text)

    @abstractmethod
    def assemble(
        self, where: str, messages: list[Message], used: list[str], material: Safe, persona: str
    ) -> list[Message]:
        """The messages of `where` rendered (`used`: the fence tags it holds)."""


class PaperLayout(Layout):
    """The templates as written; the persona leads the system message."""

    name = "paper"
    shared = False

    def assemble(
        self, where: str, messages: list[Message], used: list[str], material: Safe, persona: str
    ) -> list[Message]:
        return with_system(with_data_notice(messages, used), persona)


class SharedLayout(Layout):
    """What every call of a check shares first (see the module docstring)."""

    name = "shared"
    shared = True

    def assemble(
        self, where: str, messages: list[Message], used: list[str], material: Safe, persona: str
    ) -> list[Message]:
        tags = set(self.tags) | set(material.tags)
        unknown = set(used) - tags
        if unknown:
            raise PromptError(
                f"{where} fences {sorted(unknown)}, which the method's shared layout does "
                f"not name ({sorted(tags)})"
            )
        if any(m.role == "assistant" for m in messages):
            raise PromptError(f"{where} has assistant turns: use prompt_layout: paper")
        users = [m.content for m in messages if m.role == "user"]
        if sum(u.count(_SLOT) for u in users) != 1:
            raise PromptError(
                f"{where} must show {{{{ material }}}} once in its user text for the shared "
                "layout (or use prompt_layout: paper)"
            )
        own_system = "\n\n".join(m.content for m in messages if m.role == "system")
        role_text = "\n\n".join(t for t in (persona, own_system) if t)
        bodies = []
        for text in users:
            before, _, after = text.partition(_SLOT)
            bodies.append(f"{before.strip()}\n\n{after.strip()}".strip())
        parts = [str(material), *bodies, f"{ROLE_HEADING}\n{role_text}" if role_text else ""]
        return [
            Message(role="system", content=data_notice(tags)),
            Message(role="user", content="\n\n".join(p for p in parts if p)),
        ]


def make_layout(name: PromptLayout, tags: Iterable[str] = ()) -> Layout:
    """The layout called `name`, for a method whose prompts may fence `tags` (one object
    per name and tag set: the calls of a run share it)."""
    return _layout(name, tuple(sorted(set(tags))))


@functools.cache
def _layout(name: PromptLayout, tags: tuple[str, ...]) -> Layout:
    kinds: dict[str, type[Layout]] = {"shared": SharedLayout, "paper": PaperLayout}
    if name not in kinds:
        raise PromptError(f"prompt_layout {name!r}: expected 'shared' or 'paper'")
    return kinds[name](tags)
