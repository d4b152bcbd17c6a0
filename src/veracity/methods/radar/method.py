"""RADAR: role-anchored multi-agent debate for half-truth detection.

Stage I builds one evidence pool for the claim (`pool`); stage II runs a debate over it
on the shared engine (`veracity.deliberation`): opening, rebuttal rounds and closing,
with the participants of `roles`, then the judge rules TRUE / HALF-TRUE / FALSE with a
reason. With early stopping (`stopping.RadarStop`) a stop agent and a round judge are
consulted after every round. RADAR_single (`radar_single`) is the same pipeline with
one agent and no interaction.

Verdict metadata (per claim): ``rounds_run``, ``stop_reason``, ``tokens``,
``tokens_by_round`` (debate turns, stop agent and judge tokens of each round),
``signals`` (stop margin, p(STOP), round-judge label, probabilities and confidence of
each round, with the estimator used), the evidence pool figures and the transcript.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from veracity.core import registry
from veracity.core.context import CheckContext
from veracity.core.events import ModelCall
from veracity.core.types import CheckInput, Claim, Trace, Verdict
from veracity.deliberation import (
    Debate,
    Debater,
    DebateResult,
    FixedRounds,
    LLMJudge,
    Role,
    Schedule,
    StoppingPolicy,
    verdict_fields,
)
from veracity.methods.base import BaseMethod, MethodConfigError
from veracity.methods.radar.config import RadarBaseConfig, RadarConfig, RadarSingleConfig
from veracity.methods.radar.pool import PassagePool, fit_pool, gather_candidates
from veracity.methods.radar.roles import (
    DOMAIN_EXPERT,
    RadarPrompts,
    infer_domain,
    lineup,
    make_role,
    speaking_order,
)
from veracity.methods.radar.stopping import RadarStop
from veracity.prompting import render_input
from veracity.retrieval.base import Source
from veracity.retrieval.defaults import SourceNeed
from veracity.retrieval.managed import ensure_managed_source

_CITE = re.compile(r"\[E(\d+)\]")


class _RadarBase(BaseMethod):
    """The pipeline shared by RADAR and RADAR_single; subclasses pick agents and policy."""

    default_labels = "true_half_false"
    allowed_labels = ("true_half_false",)
    input_kinds = ("claim",)
    config: RadarBaseConfig

    def setup(self) -> None:
        super().setup()
        self.source = self._pick_source() if self.config.evidence == "retrieved" else None

    def _pick_source(self) -> Source:
        cfg = self.config
        if cfg.source is None and cfg.corpus is not None:
            c = cfg.corpus
            folder = c.indexes_dir or (self.home.indexes if self.home is not None else None)
            # the registered local index (methods import no source implementation), wrapped
            # like the injected sources (retries, rule guard, search accounting)
            local = registry.sources.get("local")(c.index, mode=c.mode, indexes_dir=folder)
            return ensure_managed_source(local)
        if cfg.source is not None:
            return self.pick_source(cfg.source)
        return self.pick_source(
            missing=f"{self.name} retrieves its evidence pool and has no source: give one with "
            "--source evidence=local:INDEX (a local index, see `veracity index build`) or "
            "--source evidence=duckduckgo (in a config file: `sources:`, or `method_config: "
            "{corpus: {index: NAME}}`), or give claims their own evidence "
            "(`method_config: {evidence: given}`; `veracity eval --gold-evidence`)"
        )

    @property
    def retrieves(self) -> bool:
        """Whether it searches: a source given or its own local corpus (not given evidence)."""
        return self.source is not None

    @classmethod
    def source_needs(cls, config: Mapping[str, Any]) -> list[SourceNeed]:
        cfg = cls.parse_config(config)
        if not isinstance(cfg, RadarBaseConfig) or cfg.evidence != "retrieved":
            return []
        if cfg.source is None and cfg.corpus is not None:
            return []  # the method opens its own local corpus
        return [SourceNeed(cfg.source or "evidence", purpose="its evidence pool")]

    # ----------------------------------------------------------------- hooks

    def participants(self) -> list[str]:
        raise NotImplementedError

    @property
    def max_rounds(self) -> int:
        raise NotImplementedError

    def policy(self, prompts: RadarPrompts) -> StoppingPolicy:
        return FixedRounds()

    # ----------------------------------------------------------------- pipeline

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        if not isinstance(item, Claim):
            raise TypeError(f"{self.name} checks claims, not a {item.kind}")
        cfg = self.config
        if cfg.evidence == "given" and not item.evidence:
            return self.verdict(
                label=None,
                error="this run uses each claim's own evidence (evidence: given, e.g. a "
                "gold-evidence variant or --gold-evidence), but this claim carries none: give "
                'the claim as a .json file with an "evidence" list (--file claim.json), or '
                "run a retrieved-evidence variant",
            )
        names = self.participants()
        docs, source_name = await gather_candidates(item, cfg, self.source)
        pool = fit_pool(
            docs,
            cfg,
            window=self.llm.capabilities.context_window or cfg.assumed_context_window,
            turns=len(names) * self.max_rounds,
            origin=cfg.evidence,
            source=source_name,
        )
        domain = await infer_domain(self.llm, item.text) if DOMAIN_EXPERT in names else None
        roles = [make_role(n, domain) for n in names]
        titles = {r.name: r.display for r in roles}
        prompts = RadarPrompts(
            render_input(item),
            pool,
            cfg.roles,
            titles,
            self.label_space,
            cfg.judge_prompt,
            cfg.prompt_layout,
            reason_chars=cfg.judge_reason_chars,
        )
        result = await self._debate(roles, names, prompts, item, pool).run()
        return self._verdict(result, pool, ctx, names, domain)

    def _debate(
        self,
        roles: list[Role],
        names: list[str],
        prompts: RadarPrompts,
        claim: Claim,
        pool: PassagePool,
    ) -> Debate:
        cfg = self.config
        debaters = [
            Debater(
                r,
                self.llm,
                prompts.turn,
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens_turn,
            )
            for r in roles
        ]
        return Debate(
            debaters,
            Schedule.opening_rebuttal_closing(speaking_order(names), max_rounds=self.max_rounds),
            self.policy(prompts),
            self.label_space,
            final_judge=self.judge("judge", prompts),
            materials={"claim": claim.text, "pool": pool},
        )

    def judge(self, name: str, prompts: RadarPrompts, *, sample: bool = False) -> LLMJudge:
        """A judge over the debate; `sample`: sample rulings when logprobs give no
        probabilities (the round judge, whose confidence the stopping rule needs)."""
        cfg = self.config
        choice = cfg.choice if sample else cfg.choice.model_copy(update={"samples": 0})
        return LLMJudge(
            name,
            self.llm,
            self.label_space,
            prompts.judge,
            temperature=0.0,
            max_tokens=cfg.max_tokens_judge,
            choice=choice,
            reason_chars=cfg.judge_reason_chars,
        )

    def _verdict(
        self,
        result: DebateResult,
        pool: PassagePool,
        ctx: CheckContext,
        names: list[str],
        domain: str | None,
    ) -> Verdict:
        fields = verdict_fields(result, self.label_space)
        cited = {int(n) for n in _CITE.findall(fields.get("rationale") or "")}
        signals = [
            {"round": c.round, "stop": c.stop, "reason": c.reason, **c.data} for c in result.checks
        ]
        metadata = {
            "agents": names,
            "domain": domain,
            "roles": self.config.roles,
            "rounds_run": result.rounds_run,
            "max_rounds": self.max_rounds,
            "stop_reason": result.stop_reason,
            "tokens": ctx.usage.total_tokens,
            "tokens_by_round": tokens_by_round(ctx.trace),
            "signals": signals,
            "evidence_setting": pool.origin,
            "pool": pool.model_dump(exclude={"passages"}),
            "transcript": [t.model_dump() for t in result.transcript.turns],
            **self.extra_metadata(),
        }
        return self.verdict(**fields, evidence=pool.evidence(cited), metadata=metadata)

    def extra_metadata(self) -> dict[str, Any]:
        return {}


class RadarMethod(_RadarBase):
    """RADAR_multi: Politician vs Scientist (or the configured line-up) with early stopping."""

    name = "radar"
    config_class = RadarConfig
    description = "role-anchored debate over a shared evidence pool, with early stopping (RADAR)"
    config: RadarConfig

    def setup(self) -> None:
        super().setup()
        if self.config.estimator == "logprobs" and not self.llm.capabilities.logprobs:
            raise MethodConfigError(
                f"{self.name}: estimator 'logprobs' needs a backend that returns token "
                f"logprobs; {self.llm.backend_id} does not (use 'auto' or 'sampling')"
            )

    def participants(self) -> list[str]:
        return lineup(self.config.roles, self.config.agents)

    @property
    def max_rounds(self) -> int:
        return self.config.rounds

    def policy(self, prompts: RadarPrompts) -> StoppingPolicy:
        cfg = self.config
        if not cfg.uses_signals:
            return FixedRounds()
        round_judge = self.judge("round_judge", prompts, sample=True)
        return RadarStop(self.llm, cfg, prompts.stop, round_judge)

    def extra_metadata(self) -> dict[str, Any]:
        cfg = self.config
        return {
            "early_stop": cfg.early_stop,
            "thresholds": {"tau_s": cfg.tau_s, "tau_v": cfg.tau_v},
            "estimator": self._estimator_name(),
        }

    def _estimator_name(self) -> str | None:
        if not self.config.uses_signals:
            return None
        if self.config.estimator == "sampling" or not self.llm.capabilities.logprobs:
            return f"sampling (k={self.config.samples_k})"
        return "logprobs"


class RadarSingleMethod(_RadarBase):
    """RADAR_single: one agent with RADAR's prompts and evidence, then the judge."""

    name = "radar_single"
    config_class = RadarSingleConfig
    description = "one role-prompted agent over the evidence pool, then a judge (RADAR_single)"
    config: RadarSingleConfig

    def participants(self) -> list[str]:
        return [self.config.role]

    @property
    def max_rounds(self) -> int:
        return 1  # an opening statement only: with one agent there is nothing to rebut


def tokens_by_round(trace: Trace) -> dict[str, Any]:
    """Tokens of a check by round and purpose, from its trace's typed LLM-call events.

    Calls carry their round and purpose (`veracity.llm.base.tag_fields`): debate turns,
    ``stop`` (stop agent), ``round_judge`` / ``judge`` (judge; calls with a ``sample``
    index are its sampled estimates). Calls without a round (domain inference) count as
    ``before``.
    """
    before = 0
    rounds: dict[int, dict[str, int]] = {}
    for call in trace.of_class(ModelCall):
        n = call.prompt_tokens + call.completion_tokens
        if call.round is None:
            before += n
            continue
        if call.purpose == "stop":
            bucket = "stop"
        elif call.purpose in ("judge", "round_judge"):
            bucket = "judge_samples" if call.sample is not None else "judge"
        else:
            bucket = "debate"
        row = rounds.setdefault(
            call.round, {"debate": 0, "stop": 0, "judge": 0, "judge_samples": 0}
        )
        row[bucket] += n
    return {
        "before": before,
        "rounds": [{"round": r, **rounds[r]} for r in sorted(rounds)],
    }
