"""``make update-engine`` on copies of the repository, with git as the only tool.

Copy A plays upstream: this working tree, committed. Copy B is cloned from A, renamed (``make rename NAME=acme``),
has an extra deleted (``make drop-extra``) and is edited in its project zone. A then commits an engine
fix with a test of its own, a change to a kept extra and one to the deleted extra, a dependency range and a
config. B's dry run shows exactly the engine and extra files as updates, renamed; ``--apply`` takes them, leaves the
owner's files byte-identical and the deleted extra deleted, and the new engine test runs in B. A second round, where
B also edited the same engine file, is refused for that file by name and applied for the rest.
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

pytestmark = pytest.mark.slow
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
OWNER_FILES = ["src/acme/models/my_backbone.py", "src/acme/tasks/classification.py", "configs/default.yaml"]
FIX = "src/{pkg}/_engine/run/folder.py"
EXTRAS = drop_extra.extras(REPO)
#: One extra B keeps and one it deletes (one that no other extra imports, so it goes alone).
KEPT = EXTRAS[0] if EXTRAS else None
DROPPED = next((e for e in reversed(EXTRAS) if e != KEPT and drop_extra.with_users([e], REPO) == [e]), None)


def _git(args: list[str], cwd: Path) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _run(args: list[str], cwd: Path, code: int = 0) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = f"{cwd / 'src'}{os.pathsep}{cwd}"  # the copy's own package, not the venv's editable one
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == code, f"{' '.join(args)} exited {proc.returncode}, expected {code}\n{out[-4000:]}"
    return out


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _upstream_commit(a: Path, message: str) -> str:
    _git(["add", "-A"], a)
    _git(["commit", "-q", "-m", message], a)
    return _git(["rev-parse", "HEAD"], a).strip()


def _update(b: Path, a: Path, ref: str, *extra: str, code: int = 0) -> str:
    return _run([sys.executable, "scripts/update_engine.py", "--upstream", str(a), "--ref", ref, *extra], b, code)


def _table(out: str) -> dict[str, set[str]]:
    """``fate -> {path}`` from the table update-engine prints."""
    found: dict[str, set[str]] = {}
    for fate, path in re.findall(
        r"^  (updated|new|removed|kept \(edited here\)|conflict)\s+(\S+?):?(?:\s|$)", out, re.M
    ):
        found.setdefault(fate, set()).add(path)
    return found


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> tuple[Path, Path]:
    """A (upstream, committed) and B (cloned, renamed to acme, DROPPED deleted, owner-edited, committed)."""
    if DROPPED is None:
        pytest.skip("needs two extras: one to keep, one to delete")
    root = tmp_path_factory.mktemp("update-engine")
    a, b = root / "A", root / "B"
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO, capture_output=True)
    for name in listed.stdout.decode().split("\0"):
        if name and (REPO / name).is_file():
            (a / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, a / name)
    _git(["init", "-q"], a)
    _upstream_commit(a, "upstream")
    _git(["clone", "-q", str(a), str(b)], root)
    (b / ".venv").symlink_to(sys.prefix, target_is_directory=True)  # make rename formats with the venv's ruff
    _run(["make", "-s", "rename", "NAME=acme", f"PYTHON={sys.executable}"], b)
    _run(["make", "-s", "drop-extra", f"NAME={DROPPED}", f"PYTHON={sys.executable}"], b)
    (b / OWNER_FILES[0]).write_text('"""The owner\'s backbone."""\n\nBACKBONE = "mine"\n', encoding="utf-8")
    task = (b / OWNER_FILES[1]).read_text(encoding="utf-8")  # edited in place
    (b / OWNER_FILES[1]).write_text(task.replace('"""Single-label', '"""Our', 1), encoding="utf-8")
    _append(b / OWNER_FILES[2], "\n# the owner's config change\n")
    _git(["add", "-A"], b)
    _git(["commit", "-q", "-m", "acme: renamed, an extra dropped, edited"], b)
    return a, b


def test_an_update_takes_upstreams_engine_and_extras_renamed_and_keeps_the_owners_edits(copies) -> None:
    a, b = copies
    owner = {p: (b / p).read_bytes() for p in OWNER_FILES}
    _append(a / FIX.format(pkg="litstarter"), '\n\ndef upstream_fix() -> str:\n    return "litstarter fixed"\n')
    test = "tests/unit/_engine/run/test_upstream_fix.py"
    (a / test).write_text(
        "from litstarter._engine.run.folder import upstream_fix\n\n\ndef test_upstream_fix() -> None:\n"
        '    assert upstream_fix() == "litstarter fixed"\n',
        encoding="utf-8",
    )
    _append(a / f"src/litstarter/extras/{KEPT}/__init__.py", "\n# litstarter: an extra's fix\n")
    _append(a / f"src/litstarter/extras/{DROPPED}/__init__.py", "\n# a fix to an extra B deleted\n")
    _append(a / "configs/default.yaml", "\n# upstream's config change\n")
    pyproject = (a / "pyproject.toml").read_text(encoding="utf-8")
    (a / "pyproject.toml").write_text(pyproject.replace('"pillow>=13,<14"', '"pillow>=13.1,<14"'), encoding="utf-8")
    ref = _upstream_commit(a, "engine fix, two extras' fixes, pillow range, config")

    dry = _update(b, a, ref)
    assert _table(dry) == {
        "updated": {FIX.format(pkg="acme"), f"src/acme/extras/{KEPT}/__init__.py"},
        "new": {test},
    }, dry
    assert "pillow>=13,<14 -> pillow>=13.1,<14" in dry and "configs/default.yaml" in dry.split("by hand:")[1], dry
    assert _git(["status", "--porcelain"], b) == "", "a dry run wrote something"

    # B's tests where the update lands (the whole fast suite of a renamed copy runs in test_make_it_yours.py)
    tests = f"{sys.executable} -m pytest -q -p no:cacheprovider -rA tests/unit/_engine/run tests/test_import_graph.py"
    applied = _update(b, a, ref, "--apply", "--test_command", tests)
    assert "PASSED tests/unit/_engine/run/test_upstream_fix.py::test_upstream_fix" in applied, applied[-3000:]
    assert re.search(r"\d+ passed", applied) and " failed" not in applied, applied[-3000:]
    assert 'return "acme fixed"' in (b / FIX.format(pkg="acme")).read_text(encoding="utf-8")
    assert "from acme._engine" in (b / test).read_text(encoding="utf-8")
    assert "# acme: an extra's fix" in (b / f"src/acme/extras/{KEPT}/__init__.py").read_text(encoding="utf-8")
    assert {p: (b / p).read_bytes() for p in OWNER_FILES} == owner
    assert not (b / f"src/acme/extras/{DROPPED}").exists() and not (b / f"tests/extras/{DROPPED}").exists()
    assert '"pillow>=13.1,<14"' in (b / "pyproject.toml").read_text(encoding="utf-8")
    assert "litstarter" not in _git(["diff", "--", "src", "tests", "pyproject.toml"], b), (
        "upstream's name leaked into B"
    )
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    _run([ruff, "check", "--no-cache", "src", "tests", "benchmarks", "examples", "scripts"], b)  # renamed and updated
    _git(["add", "-A"], b)
    _git(["commit", "-q", "-m", "update-engine"], b)

    # Round 2: B edits the engine file upstream fixes again; upstream also fixes another engine file.
    mine = b / FIX.format(pkg="acme")
    _append(mine, "\n# the owner's engine edit\n")
    _git(["commit", "-q", "-am", "owner edits the engine"], b)
    edited = mine.read_bytes()
    _append(a / FIX.format(pkg="litstarter"), "\n# upstream's second fix\n")
    _append(a / "src/litstarter/_engine/errors.py", "\n# upstream's fix elsewhere\n")
    ref2 = _upstream_commit(a, "two engine fixes")
    out = _update(b, a, ref2, "--apply", "--test_command", "", code=1)
    conflicts = [line for line in out.splitlines() if "conflict" in line and FIX.format(pkg="acme") in line]
    assert len(conflicts) == 1 and "changed here and upstream" in conflicts[0], out
    assert _table(out) == {"updated": {"src/acme/_engine/errors.py"}, "conflict": {FIX.format(pkg="acme")}}, out
    assert mine.read_bytes() == edited, "the owner's engine edit was overwritten"
    assert "upstream's second fix" in mine.with_name(mine.name + ".upstream").read_text(encoding="utf-8")
    assert "upstream's fix elsewhere" in (b / "src/acme/_engine/errors.py").read_text(encoding="utf-8")
    again = _update(b, a, ref2, code=1)  # the conflict stays one until it is merged and --resolved
    assert _table(again) == {"conflict": {FIX.format(pkg="acme")}}, again
