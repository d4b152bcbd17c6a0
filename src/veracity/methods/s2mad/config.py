"""S2MAD defaults (paper sections 3 and 4.2). The ablations of Table 2 and the "LLM only"
baseline of Table 1 are variants of ``configs/experiments/s2mad_table2.yaml`` and
``s2mad_table1.yaml``, each a few of these settings.

Debaters and the judge answer Fake / Real, as in the paper; the method reports in the
``rumor`` label space through the explicit table `ANSWER_TO_RUMOR` (Fake -> rumor,
Real -> non-rumor).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from veracity.core.bounds import Attempts, Concurrency, Items, MaxTokens, PromptChars, Rounds, Seed
from veracity.core.config import LLMConfig
from veracity.core.labels import RUMOR, LabelSpace
from veracity.methods.base import ChoiceConfig
from veracity.methods.config import refuse_own_variant
from veracity.prompt_layout import LayoutSetting

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

# "vanilla" is the plain prompt of the "LLM only" baseline (no guidance by claim type)
PromptFamily = Literal["auto", "subjective", "non_subjective", "vanilla"]


class S2MADConfig(ChoiceConfig, LayoutSetting):
    """Settings of one S2MAD run."""

    request_options = (
        "stance_separation", "stance_reasons", "prompt_family", "debate", "temperature",
        "single_agent_input",
    )  # fmt: skip

    # --- Stance separation (section 3.2, Eqs. 1-2)
    stance_separation: bool = True  # False: random halves ("w/o Stance")
    # Top-k per side (k in Eq. 2). The paper gives no value; its "w/o Stance" ablation
    # splits up to 40 sampled comments into two halves, i.e. 20 per debater, so k = 20.
    top_k: Items = Field(default=20, ge=1)
    stance_batch_size: int = Field(default=10, ge=1, le=32)  # replies scored per LLM call
    stance_concurrency: Concurrency = Field(default=4, ge=1)  # scoring calls in flight at once
    stance_attempts: Attempts = Field(default=2, ge=1)  # batched asks per reply (first + re-asks)
    # Ours: a reply still unscored after the batched asks is asked once more on its own
    # (one reply per call) before it is recorded as an error
    stance_rescore_singly: bool = True
    # completion budget per reply (a call asks for it times the batch: at most 32,032)
    stance_tokens_per_reply: int = Field(default=96, ge=16, le=1000)
    stance_reasons: bool = True  # a one-sentence reason before each score (paper's format)
    # Scoring and the subjectivity test are measurements, run greedily (cacheable); the
    # paper's scorer (glm-3-turbo) ran at its provider's default settings.
    scorer_temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    # The stance scorer's own model, as an `llm:` section over the environment's
    # settings (e.g. {backend: openai, provider: zhipu, model: glm-3-turbo}); the paper
    # scored with a different model than its debaters. None: the run's model scores.
    scorer_llm: dict[str, Any] | None = None
    max_reply_chars: PromptChars = Field(default=500, ge=20)  # each reply is cut to this length

    # --- Initial opinions (section 3.3)
    prompt_family: PromptFamily = "auto"  # auto: the LLM's subjectivity answer decides

    # --- Debate (section 3.4, Algorithm 1)
    debate: bool = True  # False: one agent over the same material ("w/o Debate")
    rounds: Rounds = Field(default=2, ge=0)  # debate rounds M after the initial opinions
    temperature: float = Field(default=0.2, ge=0.0, le=2.0)  # debaters and judge (sec. 4.2)
    max_tokens: MaxTokens = Field(default=512, ge=16)  # per debater turn or judge ruling

    # --- Variants
    # What the single agent of "w/o Debate" reads: the selected P and N ("selected"),
    # every reply in time order without stance scoring ("all"), or up to 2 x top_k
    # replies drawn at random ("random", the "LLM only" baseline).
    single_agent_input: Literal["selected", "all", "random"] = "selected"
    seed: Seed = 0  # random split of "w/o Stance"
    # Early detection (section 4.5): only the first N replies by time; None: all.
    max_replies_by_time: Items | None = Field(default=None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _no_own_variants(cls, data: Any) -> Any:
        return refuse_own_variant("s2mad", data, MOVED_VARIANTS)

    @model_validator(mode="after")
    def _checks(self) -> S2MADConfig:
        if self.scorer_llm is not None:
            self.scorer_config()  # a bad section fails here, with its field names
        if self.single_agent_input != "selected" and self.debate:
            raise ValueError(
                f"single_agent_input={self.single_agent_input!r} only applies when debate is off"
            )
        return self

    def scorer_config(self) -> LLMConfig | None:
        """The stance scorer's section checked as an `LLMConfig` over the built-in defaults
        (None: the run's model scores). The model itself is built by the composition root,
        which layers the section over the environment (`MethodParts.model_builder`)."""
        if self.scorer_llm is None:
            return None
        return LLMConfig().merged(self.scorer_llm)


# the names S2MAD's own variant table had, now experiment variants (name -> file)
MOVED_VARIANTS = {
    **dict.fromkeys(
        ("no_stance", "no_subjective", "no_non_subjective", "no_debate"), "s2mad_table2"
    ),
    "llm_only": "s2mad_table1",
}
