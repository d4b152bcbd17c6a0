"""ToE's trainable parts together: the evaluation network, the aggregation network and
the retrieval policy, with their optimisers, saved to and loaded from one checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veracity.core.errors import MethodConfigError
from veracity.methods.checkpoints import (
    CheckpointError,
    CheckpointManifest,
    checkpoint_folder,
    load_part,
    read_manifest,
    require_torch,
    save_part,
    write_manifest,
)
from veracity.methods.toe.config import ToEConfig, TrainedOn, training_command
from veracity.methods.toe.features import claim_vector, evidence_matrix
from veracity.methods.toe.networks import AggregationNet, EvaluationNet, one_thread
from veracity.methods.toe.policy import RetrievalPolicy
from veracity.methods.toe.schema import ClaimFeatures, EvidenceItem

torch = require_torch("ToE's trainable parts (its networks and retrieval policy)")

METHOD = "toe"
PARTS = ("eval_net", "agg_net", "policy")


class ToEModels:
    """The three trainable parts; untrained ones are freshly initialised (seeded)."""

    def __init__(self, cfg: ToEConfig):
        self.cfg = cfg
        torch.manual_seed(cfg.seed)
        self.eval_net = EvaluationNet(cfg.eval_net.dim, cfg.eval_net.heads).eval()
        self.agg_net = AggregationNet(cfg.agg_net.dim, cfg.agg_net.heads).eval()
        self.eval_optimizer: torch.optim.Optimizer | None = None
        self.agg_optimizer: torch.optim.Optimizer | None = None
        self.policy = RetrievalPolicy(cfg.grpo, seed=cfg.seed)
        self.trained = dict.fromkeys(("eval_net", "agg_net"), False)
        self.manifest = CheckpointManifest(method=METHOD, seed=cfg.seed)
        self.folder: Path | None = None

    # ------------------------------------------------------------ inference

    def score(self, features: ClaimFeatures, evidence: list[EvidenceItem]) -> tuple[float, float]:
        """(veracity, reliability) of a node from the evaluation network."""
        matrix, mask = evidence_matrix(evidence, self.cfg.eval_net.max_evidence)
        with torch.no_grad(), one_thread():
            v, r = self.eval_net(
                torch.tensor([claim_vector(features)]),
                torch.tensor([matrix]),
                torch.tensor([mask]),
            )
        return float(torch.sigmoid(v[0])), float(torch.sigmoid(r[0]))

    # ------------------------------------------------------------ checkpoints

    @staticmethod
    def folder_for(cfg: ToEConfig, root: Path | None, name: str | None = None) -> Path:
        """The checkpoint's folder: under `cfg.checkpoints_dir` when set, else under `root`
        (the home's ``checkpoints`` folder)."""
        name = name or cfg.checkpoint
        if name is None:
            raise CheckpointError("no checkpoint named (set method_config.checkpoint)")
        return checkpoint_folder(METHOD, name, cfg.checkpoints_dir or root)

    @classmethod
    def load(cls, cfg: ToEConfig, folder: Path) -> ToEModels:
        """The parts saved in `folder` (a missing part stays freshly initialised).

        Raises:
            CheckpointError: no checkpoint there, or a part that cannot be read.
        """
        manifest = read_manifest(folder, METHOD)
        models = cls(cfg)
        models.manifest, models.folder = manifest, folder
        if "eval_net" in manifest.parts:
            state = load_part(folder, manifest.parts["eval_net"])
            models.eval_net.load_state_dict(state["model"])
            models.eval_optimizer = _restore_optimizer(
                torch.optim.Adam(models.eval_net.parameters(), lr=cfg.eval_net.lr), state
            )
        if "agg_net" in manifest.parts:
            state = load_part(folder, manifest.parts["agg_net"])
            models.agg_net.load_state_dict(state["model"])
            opt = torch.optim.AdamW(
                models.agg_net.parameters(),
                lr=cfg.agg_net.lr,
                weight_decay=cfg.agg_net.weight_decay,
            )
            models.agg_optimizer = _restore_optimizer(opt, state)
        if "policy" in manifest.parts:
            models.policy.load_state_dict(load_part(folder, manifest.parts["policy"]))
        models.trained = {p: bool(manifest.trained.get(p)) for p in ("eval_net", "agg_net")}
        return models

    def save(self, folder: Path, **manifest_update: Any) -> CheckpointManifest:
        """Write every part and the manifest (updated with `manifest_update`)."""
        parts = {
            "eval_net": {
                "model": self.eval_net.state_dict(),
                "optimizer": _opt(self.eval_optimizer),
            },
            "agg_net": {"model": self.agg_net.state_dict(), "optimizer": _opt(self.agg_optimizer)},
            "policy": self.policy.state_dict(),
        }
        m = self.manifest
        for name, state in parts.items():
            m.parts[name] = save_part(folder, name, state)
        m.trained.update(self.trained)
        m.trained["policy"] = self.policy.updates > 0
        m.metrics.setdefault("policy", {})
        m.metrics["policy"].update(
            {"updates": self.policy.updates, "claims_seen": self.policy.claims_seen}
        )
        for key, value in manifest_update.items():
            setattr(m, key, value)
        write_manifest(folder, m)
        self.folder = folder
        return m


def models_for_run(cfg: ToEConfig, root: Path | None) -> ToEModels:
    """The parts a run uses: freshly initialised without a checkpoint, else the
    checkpoint's (under `root`, the home's ``checkpoints`` folder, unless the config
    names its own), held to `cfg.trained_on` when it is set.

    Raises:
        MethodConfigError: the checkpoint is missing or unreadable (the message gives the
            `veracity train toe` command that makes it), or it is not the finished
            training `cfg.trained_on` asks for.
    """
    if cfg.checkpoint is None:
        return ToEModels(cfg)
    command = training_command(cfg)
    try:
        folder = ToEModels.folder_for(cfg, root)
        if not (folder / "manifest.json").is_file():
            raise MethodConfigError(
                f"toe: checkpoint {cfg.checkpoint!r} not found ({folder}); make it with: {command}"
            )
        models = ToEModels.load(cfg, folder)
    except CheckpointError as exc:
        raise MethodConfigError(f"toe: {exc}; make the checkpoint with: {command}") from exc
    if cfg.trained_on is not None:
        problems = _unfinished(models.manifest, cfg.trained_on)
        if problems:
            raise MethodConfigError(
                f"toe: checkpoint {cfg.checkpoint!r} is not a finished training on "
                f"{cfg.trained_on.dataset}/{cfg.trained_on.split} ({'; '.join(problems)}); "
                f"make it with: {command}"
            )
    return models


def _unfinished(manifest: CheckpointManifest, spec: TrainedOn) -> list[str]:
    """What keeps a checkpoint from being the trained model `spec` names."""
    problems = []
    data = (manifest.data.get("dataset"), manifest.data.get("split"))
    if data != (spec.dataset, spec.split):
        made = "/".join(str(x) for x in data) if any(data) else "no dataset recorded"
        problems.append(f"trained on {made}")
    untrained = [p for p in ("eval_net", "agg_net") if not manifest.trained.get(p)]
    if untrained:
        problems.append(f"untrained {' and '.join(untrained)}")
    if not manifest.trained.get("policy"):
        problems.append("the policy was never updated (it needs more than N_warm claims)")
    return problems


def _opt(optimizer: torch.optim.Optimizer | None) -> dict[str, Any] | None:
    return optimizer.state_dict() if optimizer is not None else None


def _restore_optimizer(
    optimizer: torch.optim.Optimizer, state: dict[str, Any]
) -> torch.optim.Optimizer | None:
    if state.get("optimizer") is None:
        return None
    optimizer.load_state_dict(state["optimizer"])
    return optimizer
