"""Beyond one process: torchrun on one node, two nodes on loopback, DDP with the image cache and the balanced
sampler. All on CPU with gloo. Every subprocess is bounded in time and gets its own free port.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import CONFIGS, REPO, fast_fit_args, free_port, launcher_env, make_image_folder

BIN = Path(sys.executable).parent


def _fit(save_dir: Path, epochs: int = 2, batch_size: int = 64, config: str | None = None) -> list[str]:
    """What torchrun starts in every process: `python -m litstarter fit --config configs/default.yaml ...`."""
    configs = [CONFIGS / config] if config else []
    return ["-m", "litstarter", *fast_fit_args(save_dir, epochs=epochs, batch_size=batch_size, configs=configs)]


def _run_dirs(save_dir: Path) -> list[Path]:
    return sorted(p for p in save_dir.glob("*/*") if p.is_dir())


def _printed_world_size(output: str) -> set[int]:
    return {int(m) for m in re.findall(r"world size (\d+)", output)}


def _best_val_f1(run_dir: Path) -> float:
    best = [p.name for p in (run_dir / "checkpoints").glob("epoch=*.ckpt")]
    assert len(best) == 1, best
    return float(re.search(r"val_select=(-?[0-9.]+)\.ckpt", best[0]).group(1))  # f1_macro + a 1e-4 tie-break


def test_torchrun_two_processes_on_one_node(tmp_path: Path, digits_run: Path) -> None:
    # Per-device batch 32 x 2 processes = the single-process batch of 64: same steps, comparable accuracy.
    launch = [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2"]
    ddp = ["--trainer.strategy", "ddp", "--trainer.devices", "2", "--trainer.accelerator", "cpu"]
    cmd = [*launch, *_fit(tmp_path, epochs=3, batch_size=32), *ddp]
    proc = subprocess.run(cmd, cwd=REPO, env=launcher_env(), capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    runs = _run_dirs(tmp_path)
    assert len(runs) == 1, f"expected one run directory, got {runs}"
    assert len(list(tmp_path.rglob("metrics.json"))) == 1
    assert len(list(tmp_path.rglob("config.yaml"))) == 1
    assert len(list(runs[0].glob("events.out.tfevents.*"))) >= 1
    assert _printed_world_size(out) == {2}
    assert "effective global batch 64" in out
    metrics = json.loads((runs[0] / "metrics.json").read_text())
    assert metrics["test/acc"] > 0.9
    # Tolerance: 3 points of val macro-F1 against the single-process run of the same length (digits_run:
    # 3 epochs, batch 64). The ranks draw different augmentations, so the two cannot agree exactly.
    single, ddp_f1 = _best_val_f1(digits_run), _best_val_f1(runs[0])
    assert abs(ddp_f1 - single) <= 0.03, f"DDP val macro-F1 {ddp_f1:.4f} vs single-process {single:.4f}"


def test_two_nodes_simulated_on_loopback(tmp_path: Path) -> None:
    port = free_port()
    procs = []
    for node_rank in (0, 1):
        cmd = [
            str(BIN / "torchrun"),
            "--nnodes",
            "2",
            "--nproc-per-node",
            "1",
            "--node-rank",
            str(node_rank),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(port),
            *_fit(tmp_path, config="trainer/multinode.yaml"),
            "--trainer.num_nodes",
            "2",
            "--trainer.devices",
            "1",
            "--trainer.accelerator",
            "cpu",
            "--trainer.sync_batchnorm=false",  # SyncBatchNorm needs GPUs
        ]
        procs.append(
            subprocess.Popen(
                cmd, cwd=REPO, env=launcher_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        )
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=300)[0])
    finally:
        for proc in procs:
            proc.kill()
    for proc, out in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, out[-5000:]
    assert _printed_world_size(outputs[0]) == {2}
    assert len(list(tmp_path.rglob("metrics.json"))) == 1
    assert len(_run_dirs(tmp_path)) == 1


def test_real_ddp_builds_the_cache_once_and_the_balanced_sampler_keeps_the_class_mix_on_every_rank(
    tmp_path: Path,
) -> None:
    root = make_image_folder(tmp_path / "images", {"a": 60, "b": 20, "c": 8}, size=(16, 16))
    probe = tmp_path / "probe"
    batch = 15  # 5 of each of the 3 classes per batch
    cmd = [
        str(BIN / "torchrun"),
        "--standalone",
        "--nproc-per-node",
        "2",
        *_fit(tmp_path / "runs", epochs=1, batch_size=batch, config="data/image_folder.yaml"),
        f"--data.init_args.root={root}",
        "--data.init_args.image_size=16",
        "--data.init_args.sampler=balanced",
        f"--data.init_args.cache_dir={tmp_path / 'cache'}",
        "--data.init_args.val_fraction=0.25",
        "--data.init_args.test_fraction=0.0",
        "--trainer.strategy=ddp",
        "--trainer.devices=2",
        "--trainer.accelerator=cpu",
        "--test_after_fit=false",
        "--trainer.callbacks+=tests.e2e.ddp_probe.RecordSeenLabels",
        f"--trainer.callbacks.out_dir={probe}",
    ]
    proc = subprocess.run(cmd, cwd=REPO, env=launcher_env(), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    records = [json.loads((probe / f"rank{r}_epoch0.json").read_text()) for r in (0, 1)]
    # The cache was built once on this node: by local rank 0 in prepare_data; rank 1 waited and found it built.
    assert [r["cache_reused"] for r in records] == [False, True]
    assert len([d for d in (tmp_path / "cache").iterdir() if not d.name.startswith(".")]) == 1
    seen = [r["labels"] for r in records]
    # 88 images, 25% val -> 66 train; each rank's share is ceil(66 / 2) = 33 -> ceil(33 / 15) = 3 full batches.
    n_train = sum(round(n * 0.75) for n in (60, 20, 8))
    per_rank_batches = math.ceil(math.ceil(n_train / 2) / batch)
    # Together the ranks drew exactly one epoch's worth: every batch full, none missing or duplicated per rank.
    assert [len(s) for s in seen] == [per_rank_batches * batch] * 2
    for rank, labels in enumerate(seen):
        fractions = [labels.count(c) / len(labels) for c in range(3)]
        assert all(abs(f - 1 / 3) <= 0.05 for f in fractions), f"rank {rank} class mix {fractions}"
