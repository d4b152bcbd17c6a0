"""A checkpoint is a file a user may be handed: reading it never runs code (issue 38's
rule that files are data, applied to ToE's trained parts)."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from veracity.methods.checkpoints import CheckpointError, load_part, save_part  # noqa: E402


class _Payload:
    """An object whose unpickling would create a file (a stand-in for any command)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.mknod, (self.marker,))


def test_a_checkpoint_part_that_carries_code_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"
    torch.save({"weights": torch.zeros(2), "extra": _Payload(str(marker))}, tmp_path / "p.pt")
    with pytest.raises(CheckpointError, match="cannot read checkpoint file"):
        load_part(tmp_path, "p.pt")
    assert not marker.exists()


def test_parts_written_by_save_part_still_read(tmp_path):
    state = {"net": {"w": torch.ones(3)}, "optimizer": {"lr": 0.1, "step": [1, 2]}, "n": 4}
    file = save_part(tmp_path, "eval_net", state)
    back = load_part(tmp_path, file)
    assert torch.equal(back["net"]["w"], torch.ones(3)) and back["optimizer"]["step"] == [1, 2]
