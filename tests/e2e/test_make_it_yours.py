"""Make it yours, on one copy of the repository: ``make rename`` the package, then delete ``deploy/``.

Between them the copy's whole fast suite (``-m "not slow"``, what ``make test-fast`` runs) passes once, run with
the shared venv but the copy's own ``src`` first on the path (the venv's editable install points at the
original): after the rename, the tests of ``deploy/`` (the ones about to go) and a 1-epoch fit through the
renamed package; after the deletion, every test left. (Twice the whole suite cost the CI's two cores about three
minutes more, for no test that the split leaves out.)
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

NEW = "mytask"
IGNORED = (".git", ".venv", "runs", "lightning_logs", "__pycache__", ".pytest_cache", ".ruff_cache", "*.egg-info")


def _run(args: list[str], copy: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy / "src"), str(copy)]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(args, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    return proc


def _imports_deploy(path: Path) -> bool:
    """Whether a module imports ``<package>.deploy`` at its top level (a test of the deployment pipeline)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import) and any(a.name.startswith(f"{NEW}.deploy") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{NEW}.deploy"):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == NEW and any(a.name == "deploy" for a in node.names):
            return True
    return False


def _fast_suite(copy: Path, *paths: Path) -> str:
    """The copy's ``make test-fast`` (every test not marked slow, on two processes), or its tests in ``paths``;
    its summary line."""
    args = [sys.executable, "-m", "pytest", "-m", "not slow", "-n", "2", "-q", "-p", "no:cacheprovider"]
    return _run([*args, *map(str, paths)], copy, timeout=900).stdout.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_rename_then_delete_deploy_leaves_a_template_whose_tests_pass(tmp_path: Path) -> None:
    copy = tmp_path / "my_project"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(*IGNORED))

    _run([sys.executable, "scripts/rename.py", NEW], copy)
    assert (copy / "src" / NEW / "__main__.py").is_file() and not (copy / "src" / "litstarter").exists()
    pyproject = (copy / "pyproject.toml").read_text()
    assert f'name = "{NEW}"' in pyproject and f'{NEW} = "{NEW}.__main__:main"' in pyproject
    for folder in ("src", "tests", "configs"):
        left = [
            p for p in (copy / folder).rglob("*.*") if p.suffix in (".py", ".yaml") and "litstarter" in p.read_text()
        ]
        assert not left, f"the old name is left in {left}"
    deploy_tests = [test for test in (copy / "tests").rglob("*.py") if _imports_deploy(test)]
    assert len(deploy_tests) >= 5, deploy_tests  # the export, backends, serve, infer... tests
    summary = _fast_suite(copy, *deploy_tests)
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary

    runs = tmp_path / "runs"
    fit = [sys.executable, "-m", NEW, "fit", "--config", "configs/default.yaml", "--trainer.max_epochs=1"]
    fit += ["--trainer.limit_train_batches=2", "--trainer.limit_val_batches=1", "--data.init_args.num_workers=0"]
    _run([*fit, f"--trainer.logger.init_args.save_dir={runs}"], copy)
    run = runs / "digits" / "version_0"
    assert f"class_path: {NEW}.data.DigitsDataModule" in (run / "config.yaml").read_text()
    assert (run / "checkpoints" / "last.ckpt").is_file() and (run / "metrics.json").is_file()

    shutil.rmtree(copy / "src" / NEW / "deploy")
    for test in deploy_tests:  # deploy's tests: those importing it at the top
        test.unlink()
    help_text = _run([sys.executable, "-m", NEW, "--help"], copy).stdout
    listed = {line.split()[0] for line in help_text.split("subcommands:")[1].splitlines() if line.startswith("  ")}
    assert {"fit", "test", "doctor"} <= listed and not listed & {"export", "infer", "serve"}, listed
    summary = _fast_suite(copy)
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
