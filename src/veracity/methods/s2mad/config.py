"""S2MAD defaults (paper sections 3 and 4.2) and the named ablations of Table 2.

Debaters and the judge answer Fake / Real, as in the paper; the method reports in the
``rumor`` label space through the explicit table `ANSWER_TO_RUMOR` (Fake -> rumor,
Real -> non-rumor).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from veracity.labels import RUMOR, LabelSpace
from veracity.methods.base import ChoiceConfig

# What debaters and the judge answer (the paper's "Fake, Real" options).
DEBATE_ANSWERS = LabelSpace(
    name="s2mad_answer",
    labels=("Fake", "Real"),
    scores={"Fake": 0.0, "Real": 1.0},
    descriptions={
        "Fake": "the post spreads a false or unfounded story (a rumor)",
        "Real": "the post reports something genuine",
    },
)
# Explicit map from the debate's answers to the method's label space.
ANSWER_TO_RUMOR: dict[str, str] = {"Fake": "rumor", "Real": "non-rumor"}
assert set(ANSWER_TO_RUMOR) == set(DEBATE_ANSWERS.labels)
assert set(ANSWER_TO_RUMOR.values()) == set(RUMOR.labels)

PromptFamily = Literal["auto", "subjective", "non_subjective"]

# Table 2 ablations as overrides of the defaults. "w/o Sub" applies the non-subjective
# prompts to every post, "w/o Non-Sub" the subjective ones.
VARIANTS: dict[str, dict[str, Any]] = {
    "no_stance": {"stance_separation": False},
    "no_subjective": {"prompt_family": "non_subjective"},
    "no_non_subjective": {"prompt_family": "subjective"},
    "no_debate": {"debate": False},
}


class S2MADConfig(ChoiceConfig):
    """Settings of one S2MAD run.

    A named `variant` (see `VARIANTS`) sets several fields at once; fields given
    explicitly next to it win over the variant's values.
    """

    labels: str | None = "rumor"
    variant: str | None = None

    # --- Stance separation (section 3.2, Eqs. 1-2)
    stance_separation: bool = True  # False: random halves ("w/o Stance")
    # Top-k per side (k in Eq. 2). The paper gives no value; its "w/o Stance" ablation
    # splits up to 40 sampled comments into two halves, i.e. 20 per debater, so k = 20.
    top_k: int = Field(default=20, ge=1)
    stance_batch_size: int = Field(default=10, ge=1)  # replies scored per LLM call
    stance_concurrency: int = Field(default=4, ge=1)  # scoring calls in flight at once
    stance_attempts: int = Field(default=2, ge=1)  # asks per reply (first ask + re-asks)
    stance_tokens_per_reply: int = Field(default=96, ge=16)  # completion budget per reply
    stance_reasons: bool = True  # a one-sentence reason before each score (paper's format)
    # Scoring and the subjectivity test are measurements, run greedily (cacheable); the
    # paper's scorer (glm-3-turbo) ran at its provider's default settings.
    scorer_temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_reply_chars: int = Field(default=500, ge=20)  # each reply is cut to this length

    # --- Initial opinions (section 3.3)
    prompt_family: PromptFamily = "auto"  # auto: the LLM's subjectivity answer decides

    # --- Debate (section 3.4, Algorithm 1)
    debate: bool = True  # False: one agent over the same material ("w/o Debate")
    rounds: int = Field(default=2, ge=0)  # debate rounds M after the initial opinions
    temperature: float = Field(default=0.2, ge=0.0, le=2.0)  # debaters and judge (sec. 4.2)
    max_tokens: int = Field(default=512, ge=16)  # per debater turn or judge ruling

    # --- Variants
    # What the single agent of "w/o Debate" reads: the selected P and N ("selected"), or
    # every reply in time order without stance scoring ("all").
    single_agent_input: Literal["selected", "all"] = "selected"
    seed: int = 0  # random split of "w/o Stance"
    # Early detection (section 4.5): only the first N replies by time; None: all.
    max_replies_by_time: int | None = Field(default=None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _apply_variant(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("variant") is None:
            return data
        name = data["variant"]
        if name not in VARIANTS:
            raise ValueError(f"unknown S2MAD variant {name!r}; known: {sorted(VARIANTS)}")
        return {**VARIANTS[name], **data}

    @model_validator(mode="after")
    def _checks(self) -> S2MADConfig:
        if self.single_agent_input == "all" and self.debate:
            raise ValueError("single_agent_input='all' only applies when debate is off")
        return self
