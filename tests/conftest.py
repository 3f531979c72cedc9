"""Session fixtures: train once per session, shared by every test that needs a run (each extra's tests folder holds
its own).

Plain helpers (paths, CLI runners, image folders, TensorBoard readers) live in tests/helpers.py.
The whole suite must stay under 30 minutes on 2 cores, `make test-fast` under 2 minutes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import fast_fit_args, run_cli


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
