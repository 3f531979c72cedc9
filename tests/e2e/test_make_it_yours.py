"""Make it yours, on copies of the repository: ``make rename`` the package, then delete extras whole.

* Each extra deleted in turn (``make drop-extra``, with the extras that import it) on its own copy: nothing outside
  the deleted parts still names it, the copy lints clean and every one of its tests still imports (``pytest
  --collect-only``).
* The renamed copy with every extra deleted runs its whole fast suite, with the shared venv but the copy's own
  ``src`` first on the path (the venv's editable install points at the original): one suite for all of them keeps
  the budget, and what a single deletion could break is caught by the collection above.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "scripts"))
import drop_extra  # noqa: E402  (a script, not a package)

NEW = "mytask"
IGNORED = (".git", ".venv", "runs", "lightning_logs", "__pycache__", ".pytest_cache", ".ruff_cache", "*.egg-info")
EXTRAS = drop_extra.extras(REPO)
TEMPLATE = Path("src", "litstarter", "_template")


def _copy(tmp_path: Path, name: str) -> Path:
    copy = tmp_path / name
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(*IGNORED))
    return copy


def _run(args: list[str], copy: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy / "src"), str(copy)]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(args, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    )
    return proc


def names_of(extra: str, root: Path) -> list[re.Pattern]:
    """What names extra ``extra`` in a file: its module and folder, its parts, its pip extra, its marker and its
    subcommands (as ``<package> <subcommand>``), each as a whole word."""
    init = drop_extra.extras_dir(root) / extra / "__init__.py"
    package = drop_extra.package_dir(root).name
    parts = list(drop_extra.constant(init, "PARTS"))
    names = {f"extras.{extra}", f"extras/{extra}", f"[{extra}]", f"extra: {extra}", *parts}
    names |= {Path(part).name for part in parts if Path(part).suffix}  # a page linked from its neighbours by file name
    names |= {f"{package} {command}" for command in drop_extra.constant(init, "COMMANDS", {})}
    return [re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])") for name in sorted(names)]


def still_named(copy: Path, patterns: list[re.Pattern]) -> list[str]:
    """``file:line: text`` for every line of the copy that still names one of ``patterns``, outside the template
    ``litstarter new`` renders: it writes other projects, which choose their extras of the installed library."""
    return [
        f"{path.relative_to(copy)}:{i}: {line.strip()[:160]}"
        for path, text in drop_extra.text_files(copy)
        if TEMPLATE not in path.relative_to(copy).parents
        for i, line in enumerate(text.splitlines(), 1)
        if any(p.search(line) for p in patterns)
    ]


@pytest.mark.parametrize("extra", EXTRAS)
def test_each_extra_deletes_whole_and_leaves_nothing_that_names_it(extra: str, tmp_path: Path) -> None:
    copy = _copy(tmp_path, "project")
    patterns = [p for name in drop_extra.with_users([extra], copy) for p in names_of(name, copy)]
    _run([sys.executable, "scripts/drop_extra.py", extra], copy)
    assert not (drop_extra.extras_dir(copy) / extra).exists()
    assert still_named(copy, patterns) == []
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    for lint in (["check"], ["format", "--check"]):
        _run([ruff, *lint, "--no-cache", "src", "tests", "benchmarks", "examples", "scripts"], copy)
    collected = _run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"], copy)
    assert "error" not in collected.stdout.splitlines()[-1], collected.stdout[-3000:]


@pytest.mark.timeout(1500)
def test_rename_then_delete_every_extra_leaves_a_template_whose_fast_suite_passes(tmp_path: Path) -> None:
    copy = _copy(tmp_path, "my_project")
    license_text = (copy / "LICENSE").read_text()
    _run([sys.executable, "scripts/rename.py", NEW], copy)
    assert (copy / "LICENSE").read_text() == license_text, "the LICENSE names its copyright holder, not the package"
    assert (copy / "src" / NEW / "__main__.py").is_file() and not (copy / "src" / "litstarter").exists()
    pyproject = (copy / "pyproject.toml").read_text()
    assert f'name = "{NEW}"' in pyproject and f'{NEW} = "{NEW}.__main__:main"' in pyproject
    for folder in ("src", "tests", "configs"):
        left = [
            p for p in (copy / folder).rglob("*.*") if p.suffix in (".py", ".yaml") and "litstarter" in p.read_text()
        ]
        assert not left, f"the old name is left in {left}"

    runs = tmp_path / "runs"
    fit = [sys.executable, "-m", NEW, "fit", "--config", "configs/default.yaml", "--trainer.max_epochs=1"]
    fit += ["--trainer.limit_train_batches=2", "--trainer.limit_val_batches=1", "--data.init_args.num_workers=0"]
    _run([*fit, f"--trainer.logger.init_args.save_dir={runs}"], copy)
    run = runs / "digits" / "version_0"
    assert f"class_path: {NEW}.data.DigitsDataModule" in (run / "config.yaml").read_text()
    assert (run / "checkpoints" / "last.ckpt").is_file() and (run / "metrics.json").is_file()

    _run([sys.executable, "scripts/drop_extra.py", *EXTRAS], copy)
    assert not any((copy / "src" / NEW / "extras").glob("*/__init__.py"))
    help_text = _run([sys.executable, "-m", NEW, "--help"], copy).stdout
    listed = {line.split()[0] for line in help_text.split("subcommands:")[1].splitlines() if line.startswith("  ")}
    assert listed == {"fit", "validate", "test", "predict"}, listed
    args = [sys.executable, "-m", "pytest", "-m", "not slow", "-n", "2", "-q", "-p", "no:cacheprovider"]
    summary = _run(args, copy, timeout=900).stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
