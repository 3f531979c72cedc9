"""The scripts: the launch scripts are valid bash, safe under `set -u` on old bash, and the SLURM script's
litstarter command line fits the job's geometry (with a fake srun that records it); `make rename` refuses a name
something else already answers to, on a copy of the repository, and renames to a free one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
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


# `make rename` runs the system python3, which does not see the project's .venv: the base interpreter of the
# Python running the tests stands for it (it lacks the venv's packages), and the copy's .venv is this venv.
BASE_PYTHON = next((str(p) for p in (Path(sys.base_prefix) / "bin" / "python3",) if p.is_file()), sys.executable)
IGNORED = (".git", ".venv", "runs", "lightning_logs", "__pycache__", ".pytest_cache", ".ruff_cache", "*.egg-info")


def _repo_copy(tmp_path: Path, venv: bool) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(*IGNORED))
    if venv and sys.prefix != sys.base_prefix:
        (copy / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    return copy


def _tree(copy: Path) -> dict[str, bytes]:
    return {
        p.relative_to(copy).as_posix(): p.read_bytes()
        for p in copy.rglob("*")
        if p.is_file() and ".venv" not in p.relative_to(copy).parts and "__pycache__" not in p.parts
    }


def _make_rename(copy: Path, name: str) -> subprocess.CompletedProcess:
    args = ["make", "-s", "rename", f"NAME={name}", f"PYTHON={BASE_PYTHON}"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(args, cwd=copy, env=env, capture_output=True, text=True, timeout=120)


def _assert_rename_refused(copy: Path, names: dict[str, str]) -> None:
    """Each ``NAME`` exits 2 with one ``rename: NAME=...`` line naming it and ``why``, and changes nothing."""
    before = _tree(copy)
    for name, why in names.items():
        proc = _make_rename(copy, name)
        context = f"NAME={name}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        ours = [line for line in proc.stderr.splitlines() if not line.startswith("make")]  # make adds its Error 2
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, context
        assert len(ours) == 1 and ours[0].startswith("rename: NAME=") and name in ours[0] and why in ours[0], context
        assert _tree(copy) == before, f"NAME={name} was refused but changed the tree"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_rename_refuses_what_the_venv_imports_or_pip_would_take_for_an_installed_distribution(tmp_path: Path) -> None:
    copy = _repo_copy(tmp_path, venv=True)
    venv = ".venv" if sys.prefix != sys.base_prefix else ""  # the layer that knows these (else the running Python)
    refused = {
        "torch": "dependency",
        "numpy": "dependency",
        "lightning": "dependency",
        "tests": "tests/",
        "json": "standard library",
        "sklearn": "scikit-learn",  # what a dependency provides under another name: only the venv knows it
        "typing_extensions": f"importable in {venv}",  # installed, not declared
        "python_dateutil": f"python-dateutil installed in {venv}",  # not importable: pip's name for dateutil
        "scikit_learn": "pip normalises scikit_learn to scikit-learn",  # a declared dependency's other spelling
    }
    _assert_rename_refused(copy, refused)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_rename_before_install_still_refuses_and_a_free_name_renames_everything_but_the_license(tmp_path: Path) -> None:
    copy = _repo_copy(tmp_path, venv=False)  # a fresh clone: no .venv yet
    refused = {
        "torch": "torch is a dependency of this project",
        "lightning": "dependency",
        "scikit_learn": "pip normalises scikit_learn to scikit-learn",  # a core dependency, spelt as a module
        "tests": "tests/",
        "scripts": "scripts/",
        "drop_extra": "scripts/drop_extra.py",
        "json": "standard library",
        "My-Project": "lowercase Python identifier",
        "my project": "lowercase Python identifier",
    }
    _assert_rename_refused(copy, refused)
    before = _tree(copy)
    script = subprocess.run([BASE_PYTHON, "scripts/rename.py", "numpy"], cwd=copy, capture_output=True, text=True)
    assert script.returncode == 2 and script.stderr.count("\n") == 1 and "numpy" in script.stderr, script.stderr
    current = next(p.parent.name for p in (copy / "src").glob("*/__main__.py"))  # this copy may be renamed already
    same = _make_rename(copy, current)
    assert same.returncode == 0 and "nothing to do" in same.stdout and _tree(copy) == before, same.stderr

    new = "yourtask"
    done = _make_rename(copy, new)
    assert done.returncode == 0, done.stderr
    assert (copy / "src" / new / "__main__.py").is_file() and not (copy / "src" / current).exists()
    assert (copy / "LICENSE").read_bytes() == before["LICENSE"], "the LICENSE names its holder, not the package"
    assert f'name = "{new}"' in (copy / "pyproject.toml").read_text()
    assert f"class_path: {new}." in (copy / "configs" / "default.yaml").read_text()
    left = [p for p in (copy / "src").rglob("*.py") if current in p.read_text()]
    assert not left, f"the old name is left in {left}"  # tests/e2e/test_make_it_yours.py fits through a renamed copy
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy / "src"), str(copy)])}
    code = f"import importlib.util as u, {new}; print({new}.__file__, u.find_spec('{new}.cli').origin)"
    imported = subprocess.run([sys.executable, "-c", code], cwd=copy, env=env, capture_output=True, text=True)
    assert imported.returncode == 0 and imported.stdout.count(str(copy / "src" / new)) == 2, imported.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_quotes_the_extra_name_and_says_what_update_engine_apply_installs() -> None:
    dry = subprocess.run(["make", "-n", "drop-extra", "NAME=a b; echo x"], cwd=REPO, capture_output=True, text=True)
    assert dry.returncode == 0 and 'scripts/drop_extra.py "a b; echo x"' in dry.stdout, dry.stdout + dry.stderr
    listed = subprocess.run(["make", "help"], cwd=REPO, capture_output=True, text=True).stdout
    (update,) = [line for line in listed.splitlines() if "make update-engine" in line]
    assert "creates .venv" in update and ".[dev]" in update, update
    helped = subprocess.run(
        [sys.executable, "scripts/update_engine.py", "--help"], cwd=REPO, capture_output=True, text=True
    )
    assert "creates .venv" in " ".join(helped.stdout.split()), helped.stdout
