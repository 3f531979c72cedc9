"""The scripts: the launch scripts are valid bash, safe under `set -u` on old bash, and the SLURM script's
litstarter command line fits the job's geometry (with a fake srun that records it); `make new` quotes what it is
given."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO, launcher_env

SBATCH = REPO / "scripts" / "slurm" / "train.sbatch"
TORCHRUN_SH = REPO / "scripts" / "torchrun.sh"


def test_scripts_are_valid_bash() -> None:
    for script in (SBATCH, TORCHRUN_SH, REPO / "scripts" / "gpu_check.sh"):
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
    env = launcher_env(
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


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_new_quotes_the_name_and_the_extras() -> None:
    dry = subprocess.run(
        ["make", "-n", "new", "NAME=a b; echo x", "TASK=regression", "EXTRAS=deploy; echo y"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert 'litstarter new "a b; echo x" --task "regression" --extras "deploy; echo y"' in dry.stdout, dry.stdout
