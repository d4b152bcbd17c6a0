"""Checkpoint folders: names, atomic parts, manifests, and clear errors."""

from __future__ import annotations

import pytest

from veracity.methods.checkpoints import (
    CheckpointError,
    CheckpointManifest,
    checkpoint_folder,
    load_part,
    read_manifest,
    save_part,
    write_manifest,
)
from veracity.runtime.home import home_paths


def test_names_live_under_the_home_and_paths_are_taken_as_given(tmp_path, _isolated_home):
    assert (
        checkpoint_folder("toe", "liar", root=home_paths().checkpoints)
        == _isolated_home / "checkpoints" / "toe" / "liar"
    )
    assert (
        checkpoint_folder("toe", str(tmp_path / "x"), root=home_paths().checkpoints)
        == tmp_path / "x"
    )
    assert checkpoint_folder("toe", "a", root=tmp_path) == tmp_path / "toe" / "a"
    with pytest.raises(CheckpointError, match="letters, digits"):
        checkpoint_folder("toe", "bad name!", root=home_paths().checkpoints)


def test_parts_and_manifest_round_trip(tmp_path):
    import torch

    file = save_part(tmp_path, "net", {"w": torch.ones(2), "n": 3})
    assert file == "net.pt" and not list(tmp_path.glob(".*.tmp"))
    assert load_part(tmp_path, file)["n"] == 3
    write_manifest(tmp_path, CheckpointManifest(method="toe", parts={"net": file}, seed=4))
    manifest = read_manifest(tmp_path, "toe")
    assert manifest.parts == {"net": "net.pt"} and manifest.seed == 4


def test_broken_checkpoints_are_clear_errors(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"method": 3}')
    with pytest.raises(CheckpointError, match="not a checkpoint manifest"):
        read_manifest(tmp_path)
    write_manifest(tmp_path, CheckpointManifest(method="toe", format=99))
    with pytest.raises(CheckpointError, match="format 99"):
        read_manifest(tmp_path)
    with pytest.raises(CheckpointError, match="missing"):
        load_part(tmp_path, "gone.pt")
    (tmp_path / "junk.pt").write_text("not a torch file")
    with pytest.raises(CheckpointError, match="cannot read"):
        load_part(tmp_path, "junk.pt")
