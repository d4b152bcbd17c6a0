"""How much of an input a check shows the model, and the record of every cut.

Two layers bound free text:

- hard limits, checked when an input is built (`veracity.core.types`): an input beyond them
  is refused with an `InputError` (a claim of 200,000 characters, 20,000 replies, ...);
- `InputLimits`, applied by every method before it starts (`BaseMethod.check`): longer
  fields are cut (the cut text says how much is missing), replies beyond `max_replies`
  are dropped (the earliest are kept), and the claim or post text is cut to the model's
  budget (a share of its context window). Each cut is listed in the verdict's
  ``metadata["input_cuts"]`` and as a ``note`` event in its trace.

`InputLimits` is the ``limits:`` section of a run config (see docs/reliability.md, "Limits").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.textio import (
    MAX_EVIDENCE_DOCS,
    MAX_FIELD_CHARS,
    MAX_INPUT_CHARS,
    MAX_REPLIES,
    truncate_chars,
)
from veracity.core.types import Article, CheckInput, Claim, Document, Post, Reply


class InputCut(BaseModel):
    """One cut: which field, how much it had, how much was kept."""

    model_config = ConfigDict(extra="forbid")

    field: str
    total: int
    kept: int
    unit: str = "characters"


class InputLimits(BaseModel):
    """Per-check caps on what the model is shown.

    Attributes:
        text_chars: claim text and post text.
        body_chars: article body (methods show less; see their ``max_input_chars``).
        title_chars: article title.
        name_chars: claim speaker, post and reply author.
        context_chars: claim context.
        reply_chars: each reply's text.
        max_replies: replies kept, earliest first (by time; undated ones last).
        evidence_docs: documents handed over with a claim (``Claim.evidence``).
        evidence_chars: each such document's text.
        budget_share: the share of the model's context window the main text may take.
        chars_per_token: characters per token assumed to turn a window into characters.
    """

    model_config = ConfigDict(extra="forbid")

    text_chars: int = Field(default=20_000, ge=100, le=MAX_INPUT_CHARS)
    body_chars: int = Field(default=100_000, ge=100, le=MAX_INPUT_CHARS)
    title_chars: int = Field(default=1_000, ge=10, le=MAX_FIELD_CHARS)
    name_chars: int = Field(default=200, ge=10, le=MAX_FIELD_CHARS)
    context_chars: int = Field(default=2_000, ge=10, le=MAX_FIELD_CHARS)
    reply_chars: int = Field(default=2_000, ge=10, le=MAX_FIELD_CHARS)
    max_replies: int = Field(default=200, ge=0, le=MAX_REPLIES)
    evidence_docs: int = Field(default=50, ge=0, le=MAX_EVIDENCE_DOCS)
    evidence_chars: int = Field(default=20_000, ge=100, le=MAX_INPUT_CHARS)
    budget_share: float = Field(default=0.5, gt=0.0, le=1.0)
    chars_per_token: float = Field(default=3.0, gt=0.0, le=20.0)

    def budget(self, context_window: int | None) -> int | None:
        """Characters of main text a model with this window may be shown (None: no bound)."""
        if not context_window:
            return None
        return max(100, int(context_window * self.budget_share * self.chars_per_token))

    def apply(
        self, item: CheckInput, context_window: int | None = None
    ) -> tuple[CheckInput, list[InputCut]]:
        """`item` with every field within its limit, and the cuts made."""
        cuts: list[InputCut] = []
        budget = self.budget(context_window)

        def cut(name: str, text: str | None, limit: int) -> str | None:
            if text is None or len(text) <= limit:
                return text
            short = truncate_chars(text, limit)
            cuts.append(InputCut(field=name, total=len(text), kept=len(short)))
            return short

        def main(limit: int) -> int:
            return min(limit, budget) if budget else limit

        update: dict[str, Any] = {}
        if isinstance(item, Claim):
            update["text"] = cut("claim.text", item.text, main(self.text_chars))
            update["speaker"] = cut("claim.speaker", item.speaker, self.name_chars)
            update["context"] = cut("claim.context", item.context, self.context_chars)
            update["evidence"] = self._evidence(item.evidence, cuts, cut)
        elif isinstance(item, Article):
            update["body"] = cut("article.body", item.body, main(self.body_chars))
            update["title"] = cut("article.title", item.title, self.title_chars)
        elif isinstance(item, Post):
            update["text"] = cut("post.text", item.text, main(self.text_chars))
            update["author"] = cut("post.author", item.author, self.name_chars)
            update["replies"] = self._replies(item, cuts, cut)
        if not cuts:
            return item, []
        return item.model_copy(update=update), cuts

    def _replies(self, post: Post, cuts: list[InputCut], cut: Any) -> list[Reply]:
        kept = post.replies
        if len(kept) > self.max_replies:
            kept = post.replies_by_time(self.max_replies)
            cuts.append(
                InputCut(
                    field="post.replies", total=len(post.replies), kept=len(kept), unit="replies"
                )
            )
        out = []
        for r in kept:
            text = cut(f"reply[{r.id}].text", r.text, self.reply_chars)
            author = cut(f"reply[{r.id}].author", r.author, self.name_chars)
            same = text is r.text and author is r.author
            out.append(r if same else r.model_copy(update={"text": text, "author": author}))
        return out

    def _evidence(self, docs: list[Document], cuts: list[InputCut], cut: Any) -> list[Document]:
        kept = docs[: self.evidence_docs]
        if len(docs) > len(kept):
            cuts.append(
                InputCut(field="claim.evidence", total=len(docs), kept=len(kept), unit="documents")
            )
        out = []
        for d in kept:
            text = cut(f"evidence[{d.id}].text", d.text, self.evidence_chars)
            out.append(d if text is d.text else d.model_copy(update={"text": text}))
        return out
