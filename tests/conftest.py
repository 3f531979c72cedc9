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


@pytest.fixture(scope="session")
def multilabel_runs(tmp_path_factory) -> dict[str, Path]:
    """Two short multi-label fits on one folder of digit composites, in one subprocess: from the ``;``-separated
    labels file (``labels``) and from the one-column-per-label file (``columns``). Returns their run folders and
    ``root``, the image folder. Read-only."""
    from tests.helpers import multilabel_fit_args, run_cases, write_digit_composites

    work = tmp_path_factory.mktemp("multilabel")
    root = write_digit_composites(work / "composites", images=240, seed=1)
    cases = [
        {"argv": multilabel_fit_args(work / "runs", root, "labels.csv", "labels"), "env": {}},
        {"argv": multilabel_fit_args(work / "runs", root, "labels_columns.csv", "columns"), "env": {}},
    ]
    results = run_cases(work, cases)
    for result in results:
        assert result["code"] == 0, result["stderr"][-3000:]
    runs = {name: work / "runs" / name / "version_0" for name in ("labels", "columns")}
    return {**runs, "root": root, "output": "\n".join(r["stderr"] + r["stdout"] for r in results)}
