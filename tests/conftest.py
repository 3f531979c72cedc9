"""Shared fixtures. Train once per session and reuse: the whole suite must stay under 10 minutes on 2 cores."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import warnings
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
DEFAULT_CONFIG = CONFIGS / "default.yaml"

# Keep BLAS/OpenMP from oversubscribing the 2 cores when tests spawn processes.
os.environ.setdefault("OMP_NUM_THREADS", "1")


def run_cli(args: list[str]):
    """Run the LightningCLI in this process and return it (fast: no second `import lightning`)."""
    from litstarter.cli import main

    return main(args)


def run_litstarter(
    args: list[str],
    cwd: Path | None = None,
    timeout: float = 300,
    env: dict | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """Run ``python -m litstarter ARGS`` in a subprocess; on failure, show its output."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "litstarter", *args],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"litstarter {' '.join(args)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    return proc


def fast_fit_args(save_dir: Path, epochs: int = 3, name: str = "digits") -> list[str]:
    """Arguments for a quick digits fit whose run directory lands under ``save_dir``."""
    return [
        "fit",
        "--config",
        str(DEFAULT_CONFIG),
        f"--trainer.max_epochs={epochs}",
        f"--trainer.logger.init_args.save_dir={save_dir}",
        f"--trainer.logger.init_args.name={name}",
        "--data.init_args.num_workers=0",
    ]


def free_port() -> int:
    """A TCP port that is free right now on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def digits_run(tmp_path_factory) -> Path:
    """One short digits fit (3 epochs, in-process), shared by every test that needs a trained run.

    Returns the run directory ``<save_dir>/digits/version_0`` with config.yaml, checkpoints/ and metrics.json.
    Treat it as read-only; copy it if a test must change it.
    """
    save_dir = tmp_path_factory.mktemp("digits_run")
    run_cli(fast_fit_args(save_dir, epochs=3))
    run_dir = save_dir / "digits" / "version_0"
    assert (run_dir / "checkpoints" / "last.ckpt").exists()
    return run_dir


def best_checkpoint(run_dir: Path) -> Path:
    """The best (non-last) checkpoint of a run."""
    ckpts = [p for p in (run_dir / "checkpoints").glob("*.ckpt") if p.name != "last.ckpt"]
    assert len(ckpts) == 1, ckpts
    return ckpts[0]


@dataclass
class ExportRun:
    """One ``litstarter export`` of the digits run: its folder, exit code, printed output and warnings."""

    ckpt: Path
    out: Path
    rc: int
    stdout: str
    stderr: str
    warnings: list[str]


@pytest.fixture(scope="session")
def digits_export(digits_run, tmp_path_factory) -> ExportRun:
    """Every format exported (and verified) once from the digits run's best checkpoint, in-process.

    Treat ``out`` as read-only; copy it if a test must change it.
    """
    from litstarter.deploy.export import main

    ckpt = best_checkpoint(digits_run)
    out = tmp_path_factory.mktemp("digits_export") / "export"
    stdout, stderr = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, redirect_stdout(stdout), redirect_stderr(stderr):
        warnings.simplefilter("always")
        rc = main(["--ckpt_path", str(ckpt), "--out", str(out)])
    return ExportRun(ckpt, out, rc, stdout.getvalue(), stderr.getvalue(), [str(w.message) for w in caught])
