"""The NaN guard in a real run: it stops at the first non-finite loss, says where and why, and leaves the
checkpoints written before it byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tests.helpers import fast_fit_args, run_litstarter


def test_nan_mid_run_stops_with_step_epoch_causes_and_leaves_checkpoints_byte_identical(tmp_path: Path) -> None:
    snapshot = tmp_path / "checkpoints_before_nan"
    poison = {
        "class_path": "tests.e2e.fault_injection.PoisonWeightsAtStep",
        "init_args": {"step": 45, "snapshot": str(snapshot)},  # epoch 2, after two epochs' checkpoints
    }
    args = [*fast_fit_args(tmp_path, epochs=3), f"--trainer.callbacks+={json.dumps(poison)}"]
    proc = run_litstarter(args, check=False, timeout=120)

    assert proc.returncode != 0
    message = proc.stderr[proc.stderr.rfind("NonFiniteLossError") :]
    assert "Non-finite loss at global step 45, epoch 2" in message, proc.stderr[-3000:]
    for cause in ["learning rate", "AMP overflow", "division by zero", "bad data", "detect_anomaly"]:
        assert cause in message, f"{cause!r} missing from: {message}"

    run = tmp_path / "digits" / "version_0"
    before = {p.name: p.read_bytes() for p in snapshot.glob("*.ckpt")}
    after = {p.name: p.read_bytes() for p in (run / "checkpoints").glob("*.ckpt")}
    assert "last.ckpt" in before and len(before) == 2, sorted(before)
    assert after == before, "a checkpoint was written or changed after the loss went non-finite"
    state = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert state["global_step"] == 40
    assert not (run / "metrics.json").exists(), "a failed fit must not be tested"
