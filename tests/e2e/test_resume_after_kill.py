"""Runs survive a kill: SIGKILL mid-fit, every checkpoint still loads, and the resumed run ends where the
uninterrupted one did, bit for bit (checkpoints are taken at epoch ends, and each epoch's data order,
augmentation and dropout are functions of the seed and the epoch)."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest
import torch

from tests.helpers import fast_fit_args, last_scalar, run_cli, run_litstarter

STEPS_PER_EPOCH = 20  # digits: 1257 train images / batch 64
EPOCHS = 3  # as in the digits_run fixture, the uninterrupted reference


def test_a_failed_checkpoint_write_leaves_the_previous_file_intact(tmp_path: Path, monkeypatch) -> None:
    """Lightning writes checkpoints to a temporary file and renames it (fsspec transaction): a write that
    dies half-way, as under a kill, leaves the old last.ckpt whole and no partial file beside it."""
    import fsspec.implementations.local as local
    from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO

    io = TorchCheckpointIO()
    path = tmp_path / "last.ckpt"
    io.save_checkpoint({"w": torch.ones(3)}, path)
    before = path.read_bytes()

    real_write = local.LocalFileOpener.write if hasattr(local.LocalFileOpener, "write") else None

    def torn_write(self, data):
        (real_write or (lambda s, d: s.f.write(d)))(self, data[: len(data) // 2])
        raise OSError("killed half-way through the write")

    monkeypatch.setattr(local.LocalFileOpener, "write", torn_write, raising=False)
    with pytest.raises(OSError, match="half-way"):
        io.save_checkpoint({"w": torch.zeros(100_000)}, path)
    assert path.read_bytes() == before
    assert torch.load(path, weights_only=True)["w"].tolist() == [1.0, 1.0, 1.0]
    assert [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]


# The kill at an epoch boundary (step 40), resumed with --resume auto, is tests/e2e/test_resume_auto.py's killed run.
@pytest.mark.parametrize("kill_step", [STEPS_PER_EPOCH + STEPS_PER_EPOCH // 2], ids=["mid_epoch"])
def test_sigkill_then_resume_ends_exactly_like_the_uninterrupted_run(
    digits_run: Path, tmp_path: Path, kill_step: int
) -> None:
    args = fast_fit_args(tmp_path, epochs=EPOCHS)
    killer = json.dumps({"class_path": "tests.e2e.fault_injection.KillAtStep", "init_args": {"step": kill_step}})
    proc = run_litstarter([*args, f"--trainer.callbacks+={killer}"], check=False, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]

    killed = tmp_path / "digits" / "version_0"
    assert not (killed / "metrics.json").exists()
    ckpts = sorted((killed / "checkpoints").glob("*.ckpt"))
    assert any(p.name == "last.ckpt" for p in ckpts), ckpts
    for path in ckpts:  # none is half-written
        state = torch.load(path, weights_only=True, map_location="cpu")
        assert all(torch.isfinite(v).all() for v in state["state_dict"].values() if v.is_floating_point())
    last = torch.load(killed / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    boundary = kill_step // STEPS_PER_EPOCH * STEPS_PER_EPOCH  # last.ckpt is the last finished epoch
    assert last["global_step"] == boundary and last["epoch"] == boundary // STEPS_PER_EPOCH - 1

    cli = run_cli([*args, f"--ckpt_path={killed / 'checkpoints' / 'last.ckpt'}"])
    assert cli.trainer.current_epoch == EPOCHS
    assert cli.trainer.global_step == EPOCHS * STEPS_PER_EPOCH
    resumed = killed  # one run, one directory: the resumed fit keeps writing where the killed one did
    assert sorted(p.name for p in (tmp_path / "digits").iterdir()) == ["version_0"]
    # The run's own config.yaml stays as it was (no ckpt_path): `--config <run>/config.yaml` reruns, not resumes.
    assert "ckpt_path: null" in (resumed / "config.yaml").read_text()
    assert "last.ckpt" in (resumed / "config.resume.yaml").read_text()

    reference = json.loads((digits_run / "metrics.json").read_text())
    assert abs(last_scalar(resumed, "val/acc") - last_scalar(digits_run, "val/acc")) <= 0.005
    assert json.loads((resumed / "metrics.json").read_text()) == reference
    final = torch.load(resumed / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")["state_dict"]
    uninterrupted = torch.load(digits_run / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    for key, value in uninterrupted["state_dict"].items():
        assert torch.equal(final[key], value), f"{key} differs from the uninterrupted run"


def test_last_ckpt_holds_the_newest_epoch_after_the_monitored_metric_stops_improving(tmp_path: Path) -> None:
    """A kill costs at most one epoch only if last.ckpt is the newest epoch. Lightning's ``save_last`` writes it
    only in an epoch that also saved a new best; the template's own last.ckpt callback writes it every epoch."""
    stall = {"class_path": "tests.e2e.fault_injection.StallMetric", "init_args": {"name": "val/select"}}
    run_cli([*fast_fit_args(tmp_path, epochs=3), f"--trainer.callbacks+={json.dumps(stall)}", "--test_after_fit=false"])
    checkpoints = tmp_path / "digits" / "version_0" / "checkpoints"
    names = sorted(p.name for p in checkpoints.iterdir())
    assert len(names) == 2 and names[1] == "last.ckpt", names
    assert re.fullmatch(r"epoch=00-val_select=[01]\.\d{4}\.ckpt", names[0]), names  # the best stays at the first epoch
    last = torch.load(checkpoints / "last.ckpt", weights_only=True, map_location="cpu")
    assert last["epoch"] == EPOCHS - 1 and last["global_step"] == EPOCHS * STEPS_PER_EPOCH
