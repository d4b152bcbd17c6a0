"""ToE's configuration: tree management, retrieval agent, evidence evaluation, networks.

Defaults are the paper's (Wang et al., 2026, arXiv:2606.27736: Section III, Table I and
Section IV-A); each names the paper's symbol where it has one. Where the paper leaves a
value open, the default is ours and the comment says so. Ablations (Table III) are
`masked_actions` entries, never separate code.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from veracity.core.bounds import (
    Examples,
    Items,
    MaxTokens,
    PromptChars,
    Rounds,
    Seed,
    Weight,
    Words,
)
from veracity.methods.base import MethodConfig
from veracity.methods.checkpoints import checkpoint_folder
from veracity.prompt_layout import LayoutSetting

# The eight actions of the retrieval agent, in the order of the policy's output layer.
ACTIONS: tuple[str, ...] = (
    "web",  # general web search
    "counter",  # counter-evidence search (a web search for refuting material)
    "arxiv",  # academic papers
    "wiki",  # Wikipedia
    "social",  # social media
    "factcheck",  # fact-checking sites (PolitiFact, Snopes, ...)
    "reddit",  # Reddit discussions
    "stop",  # end the search for this node
)
SEARCH_ACTIONS: tuple[str, ...] = ACTIONS[:-1]

# Table III's tool groups: removing a group masks its actions.
TOOL_GROUPS: dict[str, tuple[str, ...]] = {
    "academic": ("arxiv",),
    "counter": ("counter",),
    "factcheck": ("wiki", "factcheck"),
    "social": ("social", "reddit"),
}

Scorer = Literal["auto", "llm_judge", "network"]
Aggregator = Literal["auto", "rules", "network"]
StepScope = Literal["claim", "node"]


class ThresholdConfig(BaseModel):
    """The five thresholds of the tree-management flags (Section III-D, IV-A)."""

    model_config = ConfigDict(extra="forbid")

    expand_reliability: float = Field(default=0.7, ge=0.0, le=1.0)  # τ_r^exp
    decide_reliability: float = Field(default=0.7, ge=0.0, le=1.0)  # τ_r^dec
    veracity_high: float = Field(default=0.7, ge=0.0, le=1.0)  # τ_v^+
    veracity_low: float = Field(default=0.3, ge=0.0, le=1.0)  # τ_v^-
    convergence: float = Field(default=0.1, gt=0.0, le=1.0)  # τ_c
    convergence_window: Rounds = Field(default=3, ge=2)  # iterations whose v_0 range is taken

    @model_validator(mode="after")
    def _ordered(self) -> ThresholdConfig:
        if self.veracity_low > self.veracity_high:
            raise ValueError("veracity_low (τ_v^-) must not exceed veracity_high (τ_v^+)")
        return self


class RewardConfig(BaseModel):
    """Eq. 5's weights and bonuses (Table I)."""

    model_config = ConfigDict(extra="forbid")

    w_reliability: Weight = 1.0  # w_r
    w_veracity: Weight = 0.5  # w_v
    w_evidence: Weight = 0.05  # w_e
    new_evidence_cap: Items = Field(default=4, ge=1)  # the 4 in min(n_t^new, 4)
    # δ_e (ours: the paper does not define it): 1 when at least one new item is relevant
    relevant_at: float = Field(default=0.5, ge=0.0, le=1.0)
    step_penalty: Weight = 0.01  # δ_step
    high_confidence: float = Field(default=0.8, ge=0.0, le=1.0)  # τ_h
    bonus_authoritative: Weight = 0.1  # b_auth
    bonus_reliability: Weight = 0.2  # b_rel


class GRPOConfig(BaseModel):
    """The policy network's optimisation (Section III-B, Table I)."""

    model_config = ConfigDict(extra="forbid")

    group_size: Items = Field(default=8, ge=2)  # G: trajectories per update
    gamma: float = Field(default=0.99, gt=0.0, le=1.0)  # γ
    clip: float = Field(default=0.2, gt=0.0, lt=1.0)  # ε
    entropy: Weight = Field(default=0.01, ge=0.0)  # α
    kl: Weight = Field(default=0.1, ge=0.0)  # β, to the reference policy
    lr: Weight = Field(default=1e-5, gt=0.0)  # learning rate
    max_grad_norm: Weight = Field(default=0.5, gt=0.0)
    warmup_claims: Examples = Field(default=8, ge=0)  # N_warm
    epochs: Rounds = Field(default=4, ge=1)  # passes over a group per update (ours)
    hidden: tuple[Items, Items, Items] = (128, 128, 64)  # policy MLP widths


class EvalNetConfig(BaseModel):
    """The evaluation network and its training (Section III-C, Eq. 6)."""

    model_config = ConfigDict(extra="forbid")

    max_evidence: Items = Field(default=20, ge=1)  # rows of the padded 20×8 evidence matrix
    dim: Items = Field(default=64, ge=8)  # embedding width (ours)
    heads: Items = Field(default=4, ge=1)  # attention heads per stance track (ours)
    lr: Weight = Field(default=1e-3, gt=0.0)  # Adam
    max_grad_norm: Weight = Field(default=1.0, gt=0.0)
    epochs: Rounds = Field(default=60, ge=1)  # training passes (ours)
    batch_size: Items = Field(default=32, ge=1)


class AggNetConfig(BaseModel):
    """The aggregation network and its training (Section III-D, Eq. 7–8)."""

    model_config = ConfigDict(extra="forbid")

    dim: Items = Field(default=64, ge=8)  # embedding width (ours)
    heads: Items = Field(default=4, ge=1)
    w_root: Weight = 1.0  # w_root
    w_imit: Weight = 0.1  # w_imit
    lr: Weight = Field(default=1e-4, gt=0.0)  # AdamW
    weight_decay: Weight = Field(default=1e-5, ge=0.0)
    max_grad_norm: Weight = Field(default=1.0, gt=0.0)
    epochs: Rounds = Field(default=60, ge=1)  # training passes over the trees (ours)


class TrainedOn(BaseModel):
    """Where the checkpoint of an evaluation of trained ToE comes from (Section IV-A: the
    paper trains on LIAR's train split only and evaluates every setting without
    adaptation). `training_command` turns it into the `veracity train toe` command that
    makes the checkpoint."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = "liar"
    split: str = "train"
    # `--source` values of the training run, e.g. "factcheck=local:liar-archive"
    sources: list[str] = Field(default_factory=list)
    config: str | None = None  # a run YAML given to training with --config
    limit: Examples | None = Field(default=None, ge=1)  # None: the whole split (the paper)

    @field_validator("sources")
    @classmethod
    def _source_flags(cls, flags: list[str]) -> list[str]:
        bad = [f for f in flags if not re.fullmatch(r"[A-Za-z0-9_-]+=\S+", f)]
        if bad:
            raise ValueError(f"sources are --source values NAME=TYPE[:INDEX], not {bad}")
        return flags


class RuleAggConfig(BaseModel):
    """The rule-based bottom-up aggregation (the paper names the factors, not their form).

    Reliability of an internal node = weighted mean child reliability × coverage ×
    consistency, where coverage = ``coverage_floor + (1 - coverage_floor) × share of
    children evaluated`` and consistency = ``1 - consistency_scale × weighted standard
    deviation of the children's veracity`` (clipped to [0, 1]).
    """

    model_config = ConfigDict(extra="forbid")

    coverage_floor: float = Field(default=0.5, ge=0.0, le=1.0)  # ours
    consistency_scale: Weight = Field(default=2.0, ge=0.0)  # ours


class ToEConfig(MethodConfig, LayoutSetting):
    """Everything a ToE run needs; see the module docstring for where values come from."""

    request_options = (
        "scorer", "aggregator", "query_per_action", "require_verbatim", "greedy", "temperature",
    )  # fmt: skip

    # --- tree management (Algorithm 1)
    max_iterations: Rounds = Field(default=20, ge=1)  # T_max
    max_depth: Rounds = Field(default=5, ge=0)  # deepest level a node may sit at
    thresholds: ThresholdConfig = Field(default_factory=ThresholdConfig)
    # Priority(n) = w_uncertainty · (1 − r_parent^aggr) + w_importance · weight(n); ours:
    # the paper says "a weighted combination" without the weights.
    priority_uncertainty: Weight = Field(default=0.5, ge=0.0)
    priority_importance: Weight = Field(default=0.5, ge=0.0)
    min_subclaims: Items = Field(default=2, ge=1)  # decomposition: 2–4 sub-claims
    max_subclaims: Items = Field(default=4, ge=1)
    rules: RuleAggConfig = Field(default_factory=RuleAggConfig)

    # --- retrieval agent (Section III-B)
    # action -> name of a source in the run's `sources:`; actions with no configured
    # source are masked (probability 0). Counter-evidence search uses the web source.
    action_sources: dict[str, str] = Field(
        default_factory=lambda: {
            "web": "web",
            "counter": "web",
            "arxiv": "arxiv",
            "wiki": "wikipedia",
            "social": "social",
            "factcheck": "factcheck",
            "reddit": "reddit",
        }
    )
    masked_actions: list[str] = Field(default_factory=list)  # ablations (Table III)
    results_per_action: Items = Field(default=3, ge=1)  # at most 3 results per action
    max_docs_per_node: Items = Field(default=10, ge=1)  # at most 10 documents per node
    max_search_steps: Rounds = Field(default=5, ge=1)  # at most 5 search steps per claim
    # what the step budget covers: the whole claim (Table I: "per claim") or, ours as a
    # variant, each node's episode
    search_steps_per: StepScope = "claim"
    query_per_action: bool = True  # an LLM writes each action's query (paper)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    grpo: GRPOConfig = Field(default_factory=GRPOConfig)
    freeze_policy: bool = False  # no online updates, no warm-up: evaluation
    greedy: bool = False  # act by argmax instead of sampling (evaluation)
    seed: Seed = 0  # sampling of actions

    # --- evidence evaluation (Section III-C)
    chunk_words: Words = Field(default=180, ge=20)  # chunk size for the cleaning LLM (ours)
    max_chunks_per_doc: Items = Field(default=3, ge=1)  # (ours) bounds cleaning calls
    max_statement_chars: PromptChars = Field(default=600, ge=50)  # longest kept statement
    # drop a kept statement the document does not contain (quote check); ours
    require_verbatim: bool = True
    scorer: Scorer = "auto"  # auto: the network once trained, else the LLM judge
    aggregator: Aggregator = "auto"  # auto: the network once trained, else the rules
    eval_net: EvalNetConfig = Field(default_factory=EvalNetConfig)
    agg_net: AggNetConfig = Field(default_factory=AggNetConfig)

    # --- checkpoints
    # A checkpoint name under <VERACITY_HOME>/checkpoints/toe/ or a folder path; None:
    # untrained networks (the LLM judge and the rules score and aggregate).
    checkpoint: str | None = None
    checkpoints_dir: Path | None = None
    # Set for every evaluation of trained ToE: the checkpoint must exist (else the run
    # stops with the command that makes it), record this dataset and split, and hold
    # trained networks and an updated policy; the policy must be frozen.
    trained_on: TrainedOn | None = None

    # --- model calls
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: MaxTokens = Field(default=384, ge=32)

    @model_validator(mode="after")
    def _valid(self) -> ToEConfig:
        unknown = (set(self.action_sources) | set(self.masked_actions)) - set(SEARCH_ACTIONS)
        if unknown:
            raise ValueError(
                f"unknown retrieval actions {sorted(unknown)}; actions: {list(SEARCH_ACTIONS)}"
            )
        if self.min_subclaims > self.max_subclaims:
            raise ValueError("min_subclaims must not exceed max_subclaims")
        if self.eval_net.dim % self.eval_net.heads or self.agg_net.dim % self.agg_net.heads:
            raise ValueError("network widths must be divisible by their attention heads")
        if self.trained_on is not None and (self.checkpoint is None or not self.freeze_policy):
            raise ValueError(
                "trained_on evaluates a trained checkpoint without adaptation: it needs "
                "checkpoint set and freeze_policy: true"
            )
        return self

    def sources_by_name(self) -> dict[str, list[str]]:
        """Source name -> the unmasked actions that search it, in action order."""
        out: dict[str, list[str]] = {}
        for action in SEARCH_ACTIONS:
            name = self.action_sources.get(action)
            if name is not None and action not in self.masked_actions:
                out.setdefault(name, []).append(action)
        return out


def training_command(cfg: ToEConfig) -> str:
    """The `veracity train toe` command that makes the checkpoint `cfg` evaluates."""
    spec = cfg.trained_on or TrainedOn()
    name = cfg.checkpoint or "default"
    if cfg.checkpoints_dir is not None:  # the CLI takes the folder itself as well
        name = str(checkpoint_folder("toe", name, cfg.checkpoints_dir))
    args = ["veracity", "train", "toe", "--dataset", spec.dataset, "--split", spec.split]
    args += ["--checkpoint", name]
    if spec.config:
        args += ["--config", spec.config]
    if spec.limit is not None:
        args += ["--limit", str(spec.limit)]
    for flag in spec.sources:
        args += ["--source", flag]
    return shlex.join(args)


# A source type that serves each action, for messages (see `veracity sources`).
ACTION_TYPES: dict[str, str] = {
    "web": "duckduckgo",
    "counter": "duckduckgo",
    "arxiv": "arxiv",
    "wiki": "wikipedia",
    "social": "reddit",
    "factcheck": "local:INDEX",
    "reddit": "reddit",
}


def missing_sources_message(cfg: ToEConfig) -> str:
    """One line saying which ``--source`` flags give ToE's actions their sources."""
    flags = " ".join(
        f"--source {name}={ACTION_TYPES[actions[0]]} ({', '.join(actions)})"
        for name, actions in cfg.sources_by_name().items()
    )
    return (
        "toe retrieves evidence and none of its actions has a source: give at least one "
        f"with --source NAME=TYPE[:INDEX], e.g. {flags} (types: `veracity sources`), or "
        "build the default local corpus once with `veracity index build ./my-docs`"
    )
