"""ToE's prompt layouts: what every prompt of a check opens with.

With ``prompt_layout: shared`` (the default) every prompt opens with one system message,
the data notice over every tag ToE's prompts fence (`TAGS`), so it is the same for all
calls of a check, and then the statement under examination (`_statement.j2`). The
call's own material (a document excerpt, the evidence list, the search tool) follows,
and the template's system text closes the prompt under "=== Your role ===". The calls
about one node (its features, queries, cleaning, analyses, judge and decomposition)
then share the notice and the statement, and calls about other nodes the notice.
``paper`` renders the templates as written: the role's system text first.
"""

from __future__ import annotations

from typing import Any

from veracity.llm.base import Message
from veracity.methods.toe.config import ToEConfig
from veracity.prompt_layout import claim_prefix, render_laid_out

PROMPTS = "veracity.methods.toe"
TAGS = (
    "address", "context", "document", "evidence", "excerpt", "published", "queries", "query",
    "statement", "title",
)  # fmt: skip


def toe_messages(cfg: ToEConfig, template: str, claim: str, **variables: Any) -> list[Message]:
    """Template `template` about `claim`, laid out as `cfg.prompt_layout` says; the
    statement block is `_statement.j2`'s, which every template includes."""
    prefix = claim_prefix(cfg.prompt_layout, claim, TAGS, heading="Statement:", tag="statement")
    return render_laid_out(PROMPTS, template, prefix, claim=claim, **variables)
