"""The SLURM requeue, end to end, on a machine without SLURM. What is simulated, and how:

* SLURM itself: ``scripts/slurm/train.sbatch`` runs under bash with the variables a one-task job gets
  (``SLURM_JOB_ID``, ``SLURM_NTASKS=1``, ``SLURM_JOB_NAME``, ...), so Lightning detects its ``SLURMEnvironment``
  and arms its requeue handler on SIGUSR1;
* ``srun``: a fake that runs its command in place (one task, no allocation);
* the signal SLURM sends ``--signal=SIGUSR1@90`` before the time limit: a callback sends SIGUSR1 mid-epoch;
* ``scontrol requeue <job id>``: a fake that records its arguments and then ends the job as SLURM would (SIGTERM,
  which Lightning's SLURM handler ignores, then SIGKILL);
* the requeued job: the same script started again with the same job id.

Lightning's own handler does the rest: it finalises the loggers (MLflow marks the run FINISHED), saves
``<default_root_dir>/hpc_ckpt_1.ckpt`` and calls ``scontrol``. The restart must pick that save by the script's own
rule, continue the same run folder and the same MLflow run (set back to RUNNING), and finish. The train loader
keeps no position, so the mid-epoch save replays its epoch's first batches in place of its last ones: the run says
so in one line, and still ends at the full step count.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import torch

from tests.helpers import CONFIGS, REPO, free_port, launcher_env

SBATCH = REPO / "scripts" / "slurm" / "train.sbatch"
JOB = "4242"
STEPS_PER_EPOCH = 20
EPOCHS = 2
SIGNAL_STEP = STEPS_PER_EPOCH + STEPS_PER_EPOCH // 2  # mid-epoch 1
# Added after the script's --trainer.logger.init_args.* (which address the one logger of configs/default.yaml).
MLFLOW = {
    "class_path": "lightning.pytorch.loggers.MLFlowLogger",
    "init_args": {"experiment_name": "slurm", "save_dir": "runs"},  # the SQLite store: runs/mlflow.db
}
FAKE_SRUN = '#!/usr/bin/env bash\nexec "$@"\n'
FAKE_SCONTROL = (
    '#!/usr/bin/env bash\nprintf "%s\\n" "$*" >> "$SCONTROL_CALLS"\nkill -TERM "$PPID"; sleep 0.5; kill -KILL "$PPID"\n'
)


def _submit_dir(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A submit directory with the configs, the fakes on PATH, and the job's environment."""
    submit = tmp_path / "submit"
    submit.mkdir()
    (submit / "configs").symlink_to(CONFIGS, target_is_directory=True)
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for name, text in (("srun", FAKE_SRUN), ("scontrol", FAKE_SCONTROL)):
        (fake_bin / name).write_text(text)
        (fake_bin / name).chmod(0o755)
    env = launcher_env(
        PATH=f"{fake_bin}:{launcher_env()['PATH']}",
        PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]),
        SCONTROL_CALLS=str(tmp_path / "scontrol_calls.txt"),
        SLURM_SUBMIT_DIR=str(submit),
        SLURM_JOB_ID=JOB,
        SLURM_JOB_NAME="litstarter",
        SLURM_NTASKS="1",
        SLURM_NNODES="1",
        SLURM_NTASKS_PER_NODE="1",
        SLURM_PROCID="0",
        SLURM_LOCALID="0",
        SLURM_NODEID="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
    )
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("LITSTARTER_TRACEBACK", None)
    return submit, env


def _sbatch(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    # On CPU: one gloo process for the DDP of configs/trainer/multinode.yaml; no SyncBatchNorm (CUDA only).
    # Two epochs, no test after fit: the requeue is under test, not the model (the suite's time budget).
    args = ["--trainer.accelerator=cpu", "--trainer.sync_batchnorm=false", f"--trainer.max_epochs={EPOCHS}"]
    args += ["--test_after_fit=false"]
    args += ["--data.init_args.num_workers=0", f"--trainer.logger+={json.dumps(MLFLOW)}", *extra]
    return subprocess.run(["bash", str(SBATCH), *args], env=env, capture_output=True, text=True, timeout=300)


def test_sigusr1_requeues_and_the_restart_continues_the_run_and_its_mlflow_run(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    submit, env = _submit_dir(tmp_path)
    run = submit / "runs" / "slurm" / f"job_{JOB}"
    signal_cb = {"class_path": "tests.e2e.fault_injection.SignalAtStep", "init_args": {"step": SIGNAL_STEP}}
    first = _sbatch(env, f"--trainer.callbacks+={json.dumps(signal_cb)}")
    assert first.returncode != 0, "scontrol ends the job"
    assert (tmp_path / "scontrol_calls.txt").read_text().splitlines() == [f"requeue {JOB}"], first.stderr[-3000:]
    hpc = run / "hpc_ckpt_1.ckpt"
    assert hpc.is_file(), first.stderr[-3000:]
    assert torch.load(hpc, weights_only=True, map_location="cpu")["global_step"] == SIGNAL_STEP
    run_id = json.loads((run / "mlflow.json").read_text())["run_id"]
    client = MlflowClient(f"sqlite:///{submit / 'runs' / 'mlflow.db'}")
    assert client.get_run(run_id).info.status == "FINISHED"  # Lightning's handler finalised the logger

    status_file = tmp_path / "status.txt"
    probe = {"class_path": "tests.e2e.fault_injection.RecordMlflowStatus", "init_args": {"path": str(status_file)}}
    second = _sbatch(env, f"--trainer.callbacks+={json.dumps(probe)}")
    assert second.returncode == 0, second.stderr[-4000:]
    assert f"resuming from runs/slurm/job_{JOB}/hpc_ckpt_1.ckpt" in second.stdout
    assert "resuming mid-epoch: epoch 1 had trained 10 of its 20 batches" in second.stderr, second.stderr[-3000:]
    assert status_file.read_text().split() == ["RUNNING"], "the resume sets the finished MLflow run running again"

    assert sorted(p.name for p in (submit / "runs" / "slurm").iterdir()) == [f"job_{JOB}"]
    assert (run / "config.resume.yaml").is_file() and "ckpt_path: null" in (run / "config.yaml").read_text()
    last = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert last["global_step"] == EPOCHS * STEPS_PER_EPOCH  # the replayed batches stand in for the lost ones
    (experiment,) = [e for e in client.search_experiments() if e.name == "slurm"]
    assert [r.info.run_id for r in client.search_runs([experiment.experiment_id])] == [run_id]
    assert client.get_run(run_id).info.status == "FINISHED"
    assert len(client.get_metric_history(run_id, "val/acc")) == EPOCHS  # epoch 0, then epoch 1 after the restart
