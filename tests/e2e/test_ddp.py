"""DDP on two CPU processes (gloo): end to end on digits, rank 0 alone writes, epoch metrics are synced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import CONFIGS, fast_fit_args, free_port, last_scalar, run_litstarter

# Val accuracy of the 2-process run vs the 1-process digits_run (same effective batch of 64, same steps,
# another shuffle): on 270 val images one image is 0.37 points; a different data order moves 3 epochs of
# training by a few images.
VAL_ACC_TOLERANCE = 0.03


def test_ddp_two_cpu_processes_fit_with_rank_zero_writes_and_synced_epoch_metrics(
    digits_run: Path, tmp_path: Path
) -> None:
    ranks = tmp_path / "ranks"
    dump = {"class_path": "tests.e2e.fault_injection.DumpRankMetrics", "init_args": {"folder": str(ranks)}}
    args = [
        *fast_fit_args(tmp_path / "runs", epochs=3),
        "--config",
        str(CONFIGS / "trainer" / "ddp.yaml"),
        "--trainer.accelerator=cpu",
        "--trainer.devices=2",
        "--data.init_args.batch_size=32",  # x 2 processes = the single-process batch of 64
        f"--trainer.callbacks+={json.dumps(dump)}",
    ]
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    proc = run_litstarter(args, timeout=180, env=env)
    # ddp.yaml's sync_batchnorm: true is GPU-only in torch: the CLI turns it off on CPU and says so.
    assert "turned SyncBatchNorm off" in proc.stderr

    rank0, rank1 = (json.loads((ranks / f"rank{r}.json").read_text()) for r in (0, 1))
    assert rank0["global_step"] == rank1["global_step"] == 3 * 20  # 629 images per rank / 32
    # Epoch-level metrics are reduced across processes: both ranks hold the same values ...
    for key in ("val/loss", "val/acc", "val/f1_macro", "val/auroc_macro", "train/acc"):
        assert rank0["metrics"][key] == rank1["metrics"][key], key
    # ... while per-step logged values are not reduced (each rank logs the loss of its own shard).
    assert rank0["train_loss_steps"] != rank1["train_loss_steps"]

    # Only rank 0 wrote: one run directory, one best + last checkpoint, one metrics.json, and every
    # TensorBoard file (events.out.tfevents.<time>.<host>.<pid>.<n>) carries rank 0's process id.
    run_dirs = list((tmp_path / "runs" / "digits").iterdir())
    assert [d.name for d in run_dirs] == ["version_0"]
    run = run_dirs[0]
    ckpts = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert len(ckpts) == 2 and "last.ckpt" in ckpts, ckpts
    assert (run / "metrics.json").exists() and (run / "confusion_matrix.png").exists()
    event_pids = {p.name.split(".")[-2] for p in run.glob("events.out.tfevents.*")}
    assert event_pids == {str(rank0["pid"])}, (event_pids, rank0["pid"], rank1["pid"])

    ddp_acc, single_acc = last_scalar(run, "val/acc"), last_scalar(digits_run, "val/acc")
    print(f"final val/acc: 2-process DDP {ddp_acc:.4f}, single process {single_acc:.4f}")
    assert abs(ddp_acc - single_acc) <= VAL_ACC_TOLERANCE, (ddp_acc, single_acc)
    assert rank0["metrics"]["val/acc"] == pytest.approx(ddp_acc)
