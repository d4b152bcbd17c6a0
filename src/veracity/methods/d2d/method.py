"""``d2d``: Debate-to-Detect, misinformation detection as a staged debate (a baseline).

Domain detection and speaker profiles (`roles`), then a debate on the shared engine —
opening, rebuttal, free debate and closing, the affirmative team (the input is true)
against the negative team (it is false) — then judgment by a panel that scores five
dimensions and a summary judge (`judging`). Evidence, when the run gives it (the claim's
own, or a search of the method's sources), is shown to every speaker and judge. See
README.md for the map from D2D's description to this code.
"""

from __future__ import annotations

from veracity.core.context import CheckContext
from veracity.core.events import Note, Stage
from veracity.core.types import CheckInput, Evidence, Verdict
from veracity.deliberation import Debate, FixedRounds
from veracity.evidence.passages import passage_rows
from veracity.methods.base import BaseMethod
from veracity.methods.d2d import roles
from veracity.methods.d2d.config import D2DConfig
from veracity.methods.d2d.judging import D2DPanel
from veracity.methods.passages import PassageReading
from veracity.prompt_layout import make_layout
from veracity.prompting import input_kind_name, render_input


class D2DMethod(PassageReading, BaseMethod):
    """Affirmative and negative teams debate in four stages; judges score five dimensions."""

    name = "d2d"
    config_class = D2DConfig
    default_labels = "real_fake"
    description = "D2D: fixed pro/con teams debate in four stages, five scoring judges (baseline)"
    config: D2DConfig
    passage_purpose = "evidence for the debate"

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg, kind = self.config, input_kind_name(item)
        shown = render_input(item, max_chars=cfg.max_input_chars)
        found = await self.passages(item, ctx)
        passages = passage_rows(found.documents, cfg.max_passage_chars)
        material = roles.material(kind, shown, passages)
        layout = make_layout(cfg.prompt_layout, roles.TAGS)
        domain, profiles = "", {}
        if cfg.profiles:
            ctx.emit(Stage(name=self.name, step="profiles"))
            domain = await roles.detect_domain(self.llm, kind, shown, material, layout)
            profiles = await roles.write_profiles(self.llm, cfg, kind, domain)
            ctx.emit(Note(name=self.name, text=f"field: {domain}", detail={"domain": domain}))
        prompts = roles.TurnPrompts(
            kind, shown, passages, profiles, cfg.turn_chars, material, layout
        )
        materials = {"kind": kind, "input": shown, "passages": passages, "material": material,
                     "layout": layout, "transcript": prompts.transcript}  # fmt: skip
        panel = D2DPanel(self.llm, cfg, self.label_space, materials)
        debate = Debate(
            roles.debaters(self.llm, cfg, prompts, kind, domain),
            roles.schedule(cfg.free_rounds),
            FixedRounds(),
            self.label_space,
            final_judge=panel,
        )
        result = await debate.run()
        aff = sum(s.affirmative for s in panel.scores)
        total = cfg.points * len(panel.scores)
        metadata = {
            "domain": domain or None,
            "profiles": profiles,
            "scores": [s.model_dump() for s in panel.scores],
            "affirmative_points": aff,
            "negative_points": total - aff,
            "evidence_setting": found.origin,
            "rounds_run": result.rounds_run,
            "transcript": [t.model_dump() for t in result.transcript.turns],
        }
        evidence = [Evidence(document=d, note=f"{found.origin}, shown") for d in found.documents]
        label = result.decision.label if result.decision else None
        if label is None:
            reason = result.decision.reason if result.decision else result.stop_reason
            return self.verdict(
                label=None, abstained=True, abstain_reason=reason, evidence=evidence,
                metadata=metadata,
            )  # fmt: skip
        return self.verdict(
            label=label,
            score=aff / total,
            rationale=result.decision.reason,
            evidence=evidence,
            metadata=metadata,
        )
