"""Beyond one process: torchrun on one node, two nodes on loopback, and the SLURM script with a fake srun.

All on CPU with gloo. Every subprocess is bounded in time and gets its own free port.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DEFAULT_CONFIG, REPO, free_port

SBATCH = REPO / "scripts" / "slurm" / "train.sbatch"
TORCHRUN_SH = REPO / "scripts" / "torchrun.sh"
BIN = Path(sys.executable).parent
# What torchrun starts in every process: `python -m litstarter fit --config configs/default.yaml ...`.
FIT_DEFAULT = ["-m", "litstarter", "fit", "--config", str(DEFAULT_CONFIG)]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PATH": f"{BIN}:{os.environ['PATH']}", **extra}
    for key in [k for k in env if k.startswith(("SLURM_", "TORCHELASTIC_"))]:
        env.pop(key)  # never let a real cluster's variables leak into these tests
    env.update(extra)
    return env


def _short_fit_args(save_dir: Path, epochs: int = 2, batch_size: int = 64) -> list[str]:
    return [
        f"--trainer.logger.init_args.save_dir={save_dir}",
        f"--trainer.max_epochs={epochs}",
        f"--data.init_args.batch_size={batch_size}",
        "--data.init_args.num_workers=0",
    ]


def test_scripts_are_valid_bash() -> None:
    for script in (SBATCH, TORCHRUN_SH):
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr


def _fake_srun(tmp_path: Path) -> Path:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    srun = fake_bin / "srun"
    srun.write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$SRUN_ARGS_FILE"\n')
    srun.chmod(0o755)
    return fake_bin


RUN_DIR = "runs/slurm/job_4242"
LAST = f"{RUN_DIR}/checkpoints/last.ckpt"
HPC = f"{RUN_DIR}/hpc_ckpt_1.ckpt"


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        ({}, None),
        ({LAST: 100}, LAST),
        ({LAST: 100, HPC: 200}, HPC),  # preempted mid-epoch: the SIGUSR1 save is the newer state
        ({LAST: 300, HPC: 200}, LAST),  # resumed from the hpc save, then trained on past another epoch end
    ],
    ids=["fresh", "last_only", "hpc_newer", "last_newer"],
)
def test_slurm_script_launches_litstarter_with_the_job_geometry(
    tmp_path: Path, present: dict[str, int], expected: str | None
) -> None:
    fake_bin = _fake_srun(tmp_path)
    workdir = tmp_path / "submit"
    workdir.mkdir()
    for rel, mtime in present.items():
        ckpt = workdir / rel
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        ckpt.write_bytes(b"checkpoint")
        os.utime(ckpt, (mtime, mtime))
    (workdir / "hpc_ckpt_9.ckpt").write_bytes(b"another job's save")  # in the submit dir: never this job's
    args_file = tmp_path / "srun_args.txt"
    env = _env(
        PATH=f"{fake_bin}:{os.environ['PATH']}",
        SRUN_ARGS_FILE=str(args_file),
        SLURM_JOB_ID="4242",
        SLURM_NNODES="2",
        SLURM_NTASKS_PER_NODE="4",
        SLURM_SUBMIT_DIR=str(workdir),
    )
    proc = subprocess.run(
        ["bash", str(SBATCH), "--trainer.max_epochs", "50"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    argv = args_file.read_text().splitlines()
    assert argv[:2] == ["litstarter", "fit"]
    flat = " ".join(argv)
    assert "--config configs/trainer/multinode.yaml" in flat
    assert "--trainer.num_nodes 2" in flat and "--trainer.devices 4" in flat
    assert "--trainer.logger.init_args.version job_4242" in flat
    # Lightning saves hpc_ckpt_<n>.ckpt on SIGUSR1 into default_root_dir: the job's own run directory.
    assert f"--trainer.default_root_dir {RUN_DIR}" in flat
    assert flat.endswith("--trainer.max_epochs 50"), "extra arguments must be passed through last"
    ckpt_paths = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--ckpt_path"]
    assert ckpt_paths == ([expected] if expected else [])
    sbatch_lines = [line for line in SBATCH.read_text().splitlines() if line.startswith("#SBATCH")]
    for key in ("--nodes", "--ntasks-per-node", "--gpus-per-node", "--signal=SIGUSR1", "--requeue"):
        assert any(key in line for line in sbatch_lines), key
    # SLURM opens the output file before the script starts and creates no folders: it must lie in the submit dir.
    outputs = [line.split("=", 1)[1] for line in sbatch_lines if line.startswith("#SBATCH --output=")]
    assert outputs and all("/" not in out for out in outputs), outputs


@pytest.mark.parametrize("script", [SBATCH, TORCHRUN_SH], ids=lambda p: p.name)
def test_possibly_empty_arrays_expand_safely_under_set_u(script: Path) -> None:
    # bash < 4.4 (macOS ships 3.2) calls an empty array unbound under `set -u`, so "${a[@]}" of an array that
    # may be empty must be written ${a[@]+"${a[@]}"}; the bash here is newer and cannot show the failure.
    text = script.read_text()
    maybe_empty = re.findall(r"^\s*(\w+)=\(\)", text, flags=re.MULTILINE)
    assert maybe_empty, "expected at least one array that starts empty"
    for name in maybe_empty:
        bare = re.findall(rf'(?<!\+)"\$\{{{name}\[@\]\}}"', text)
        assert not bare, f'{script.name}: expand {name} as ${{{name}[@]+"${{{name}[@]}}"}}'
        assert f'${{{name}[@]+"${{{name}[@]}}"}}' in text


def _run_dirs(save_dir: Path) -> list[Path]:
    return sorted(p for p in save_dir.glob("*/*") if p.is_dir())


def _printed_world_size(output: str) -> set[int]:
    return {int(m) for m in re.findall(r"world size (\d+)", output)}


def _best_val_acc(run_dir: Path) -> float:
    best = [p.name for p in (run_dir / "checkpoints").glob("epoch=*.ckpt")]
    assert len(best) == 1, best
    return float(re.search(r"val_acc=([0-9.]+)\.ckpt", best[0]).group(1))


@pytest.mark.slow
def test_torchrun_two_processes_on_one_node(tmp_path: Path, digits_run: Path) -> None:
    # Per-device batch 32 x 2 processes = the single-process batch of 64: same steps, comparable accuracy.
    launch = [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2"]
    ddp = ["--trainer.strategy", "ddp", "--trainer.devices", "2", "--trainer.accelerator", "cpu"]
    cmd = [*launch, *FIT_DEFAULT, *ddp, *_short_fit_args(tmp_path, epochs=3, batch_size=32)]
    proc = subprocess.run(cmd, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=240)
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
    # Tolerance: 3 points of val accuracy against the single-process run of the same length (digits_run:
    # 3 epochs, batch 64). The ranks draw different augmentations, so the two cannot agree exactly.
    single, ddp_acc = _best_val_acc(digits_run), _best_val_acc(runs[0])
    assert abs(ddp_acc - single) <= 0.03, f"DDP val acc {ddp_acc:.4f} vs single-process {single:.4f}"


@pytest.mark.slow
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
            *FIT_DEFAULT,
            "--config",
            str(REPO / "configs" / "trainer" / "multinode.yaml"),
            "--trainer.num_nodes",
            "2",
            "--trainer.devices",
            "1",
            "--trainer.accelerator",
            "cpu",
            "--trainer.sync_batchnorm=false",  # SyncBatchNorm needs GPUs
            *_short_fit_args(tmp_path),
        ]
        procs.append(
            subprocess.Popen(cmd, cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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


def test_batch_plan_is_printed_and_lr_scales_with_the_global_batch(tmp_path: Path, caplog) -> None:
    from tests.conftest import run_cli

    cli = run_cli(
        [
            "fit",
            "--config",
            str(DEFAULT_CONFIG),
            f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--trainer.max_epochs=1",
            "--trainer.limit_train_batches=2",
            "--trainer.limit_val_batches=1",
            "--trainer.accumulate_grad_batches=2",
            "--data.init_args.batch_size=128",
            "--data.init_args.num_workers=0",
            "--model.scale_lr_with_batch=linear",
            "--model.reference_batch_size=64",
            "--test_after_fit=false",
        ]
    )
    scheduler = cli.trainer.lr_scheduler_configs[0].scheduler
    # global batch 128 x 1 device x 1 node x 2 accumulation = 256 = 4 x the reference 64
    assert scheduler.base_lrs[0] == pytest.approx(0.003 * 4)
    assert "world size 1" in caplog.text and "effective global batch 256" in caplog.text
    assert "lr x 4" in caplog.text


@pytest.mark.slow
def test_real_ddp_builds_the_cache_once_and_the_balanced_sampler_keeps_the_class_mix_on_every_rank(
    tmp_path: Path,
) -> None:
    from tests.data.images import make_class_folder

    root = make_class_folder(tmp_path / "images", {"a": 60, "b": 20, "c": 8}, size=(16, 16))
    probe = tmp_path / "probe"
    batch = 15  # 5 of each of the 3 classes per batch
    cmd = [
        str(BIN / "torchrun"),
        "--standalone",
        "--nproc-per-node",
        "2",
        *FIT_DEFAULT,
        "--config",
        str(REPO / "configs" / "data" / "image_folder.yaml"),
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
        "--trainer.callbacks+=tests.ddp_probe.RecordSeenLabels",
        f"--trainer.callbacks.out_dir={probe}",
        *_short_fit_args(tmp_path / "runs", epochs=1, batch_size=batch),
    ]
    proc = subprocess.run(cmd, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=240)
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
