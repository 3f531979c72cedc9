"""Same seed, same metrics: seed_everything(workers=True) + deterministic + per-epoch seeding of data and dropout."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.helpers import fast_fit_args, run_cli

SHORT = ["--trainer.limit_train_batches=6", "--trainer.limit_val_batches=3", "--test_after_fit=false"]


def short_fit(save_dir: Path, seed: int):
    cli = run_cli([*fast_fit_args(save_dir, epochs=2), *SHORT, f"--seed_everything={seed}"])
    metrics = {k: float(v) for k, v in cli.trainer.callback_metrics.items()}
    weights = {k: v.clone() for k, v in cli.model.state_dict().items()}
    return metrics, weights


def test_two_runs_with_the_same_seed_give_identical_metrics_and_weights(tmp_path: Path) -> None:
    metrics_a, weights_a = short_fit(tmp_path / "a", seed=7)
    metrics_b, weights_b = short_fit(tmp_path / "b", seed=7)
    assert {"train/loss_epoch", "val/loss", "val/acc", "val/auroc_macro"} <= set(metrics_a)
    assert metrics_a == metrics_b
    assert all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)
    # The test could fail: another seed changes the initial weights, and so the metrics.
    metrics_c, _ = short_fit(tmp_path / "c", seed=8)
    assert metrics_c["val/loss"] != metrics_a["val/loss"]
