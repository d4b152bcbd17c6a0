"""Checkpoints of trained components: a folder per checkpoint under the user's data
directory, with a manifest that says what was trained on what.

Layout: ``<VERACITY_HOME>/checkpoints/<method>/<name>/`` holding ``manifest.json`` and
one ``<part>.pt`` file per trained part (model weights and optimiser state, written with
`torch.save`). Every file is written to a temporary name and renamed, manifest last, so
an interrupted save leaves the previous checkpoint readable. Checkpoints never go into
the source tree.

Torch is an optional extra (``veracity[torch]``): `require_torch` imports it for the
modules that train or run networks and, when it is missing, says how to install it.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from veracity.core.errors import ConfigError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
FORMAT = 1


class CheckpointError(ConfigError):
    """A checkpoint that cannot be found, read or written."""


TORCH_EXTRA = "torch"


class TorchMissing(ConfigError):
    """Torch, which an optional part needs, is not installed."""


def require_torch(what: str) -> ModuleType:
    """The `torch` module, imported now.

    Args:
        what: the part that needs it, for the message (e.g. "ToE's networks").

    Raises:
        TorchMissing: torch is not installed; the message gives the pip command that adds
            the ``torch`` extra to this installation.
    """
    try:
        import torch
    except ImportError as exc:
        from veracity.core.extras import install_command

        raise TorchMissing(
            f"{what} need torch, an optional extra: {install_command(TORCH_EXTRA)}"
        ) from exc
    return torch


class CheckpointManifest(BaseModel):
    """What a checkpoint holds and how it was made.

    Attributes:
        method: the method whose parts these are.
        parts: part name -> file name (e.g. ``{"policy": "policy.pt"}``).
        trained: part name -> whether it has been trained (an untrained part is saved
            only for its optimiser state or counters).
        data: what it was trained on (dataset, split, ids or counts).
        seed: the training seed.
        config: the method config it was trained with.
        metrics: training metrics per part (losses, updates, ...).
    """

    model_config = ConfigDict(extra="forbid")

    format: int = FORMAT
    method: str
    created: str = Field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat())
    updated: str = Field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat())
    parts: dict[str, str] = Field(default_factory=dict)
    trained: dict[str, bool] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)


def checkpoint_folder(method: str, name: str, root: Path | None) -> Path:
    """The folder of checkpoint `name` of `method` under `root` (the home's
    ``checkpoints`` folder, or a config's own); a path is taken as it is.

    Raises:
        CheckpointError: `name` is neither a plain name nor a path, or it is a name and
            `root` is None.
    """
    if "/" in name or "\\" in name or name.startswith(("~", ".")):
        return Path(name).expanduser()
    if not _NAME.match(name):
        raise CheckpointError(
            f"checkpoint name {name!r}: use letters, digits, '.', '_' and '-' (or give a path)"
        )
    if root is None:  # the home's folder is the composition root's to pass
        raise CheckpointError(
            f"checkpoint {name!r} is a name: give the folder checkpoints live in "
            "(veracity.runtime passes VERACITY_HOME/checkpoints) or a path"
        )
    return Path(root) / method / name


def _replace(tmp: Path, final: Path) -> None:
    os.replace(tmp, final)


def save_part(folder: Path, part: str, state: dict[str, Any]) -> str:
    """Write one part's state (tensors, optimiser state, plain data) atomically."""
    torch = require_torch("saving a checkpoint's trained parts")

    folder.mkdir(parents=True, exist_ok=True)
    file = f"{part}.pt"
    tmp = folder / f".{file}.tmp"
    torch.save(state, tmp)
    _replace(tmp, folder / file)
    return file


def load_part(folder: Path, file: str) -> dict[str, Any]:
    """Read one part written by `save_part`.

    Raises:
        CheckpointError: the file is missing or unreadable.
    """
    torch = require_torch("reading a checkpoint's trained parts")

    path = folder / file
    if not path.is_file():
        raise CheckpointError(f"checkpoint file {path} is missing")
    try:
        # weights_only: tensors and plain containers only. A checkpoint is a file a user
        # may be handed, and a full unpickle would run whatever code it names.
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt, foreign or code-carrying file: say which
        raise CheckpointError(f"cannot read checkpoint file {path}: {exc}") from exc


def write_manifest(folder: Path, manifest: CheckpointManifest) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    manifest.updated = _dt.datetime.now(_dt.timezone.utc).isoformat()
    tmp = folder / ".manifest.json.tmp"
    tmp.write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    _replace(tmp, folder / "manifest.json")


def read_manifest(folder: Path, method: str | None = None) -> CheckpointManifest:
    """The manifest of the checkpoint in `folder`.

    Raises:
        CheckpointError: no checkpoint there, a broken manifest, or another method's.
    """
    path = folder / "manifest.json"
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {folder} (manifest.json not found)")
    try:
        manifest = CheckpointManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise CheckpointError(f"{path}: not a checkpoint manifest: {exc}") from exc
    if manifest.format != FORMAT:
        raise CheckpointError(f"{path}: checkpoint format {manifest.format}, expected {FORMAT}")
    if method is not None and manifest.method != method:
        raise CheckpointError(f"{folder} holds a {manifest.method} checkpoint, not {method}")
    return manifest


__all__ = [
    "CheckpointError",
    "CheckpointManifest",
    "checkpoint_folder",
    "load_part",
    "read_manifest",
    "save_part",
    "write_manifest",
]
