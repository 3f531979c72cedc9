"""The engine lock: which upstream commit this clone's engine and extras came from, and a hash of every file installed.

``make rename`` writes it, ``make drop-extra`` keeps it true, and ``make update-engine`` reads it as the base of its
three-way comparison (see ``scripts/update_engine.py``). It is ``.engine-lock.json`` at the repository root, JSON:

    {"ref": "<upstream commit>", "files": {"src/acme/_engine/errors.py": "<sha256>", ...}}

Upstream owns the managed files: ``src/<package>/_engine/``, ``tests/unit/_engine/``, and for each extra this clone
still has, ``src/<package>/extras/<extra>/`` and ``tests/extras/<extra>/`` (plus each folder's ``__init__.py``).
Everything else (the project zone, configs, docs, scripts) is the owner's. Nothing but the standard library is needed.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

LOCK = ".engine-lock.json"


def package(root: Path) -> str:
    """The package under ``src/`` (the one folder with an ``__init__.py``)."""
    found = sorted(p.name for p in (root / "src").iterdir() if (p / "__init__.py").is_file())
    if len(found) != 1:
        raise SystemExit(f"expected one package under {root / 'src'}, found {found}")
    return found[0]


def extras(root: Path, name: str | None = None) -> list[str]:
    """The extras of the tree at ``root``, by folder name."""
    folder = root / "src" / (name or package(root)) / "extras"
    return sorted(p.name for p in folder.iterdir() if (p / "__init__.py").is_file()) if folder.is_dir() else []


def zones(name: str, kept: list[str]) -> list[str]:
    """The folders upstream owns in a tree whose package is ``name`` and whose extras are ``kept``."""
    found = [f"src/{name}/_engine", "tests/unit/_engine"]
    for extra in kept:
        found += [f"src/{name}/extras/{extra}", f"tests/extras/{extra}"]
    return found


def managed(root: Path, name: str, kept: list[str]) -> list[str]:
    """Every file under :func:`zones` in the tree at ``root``, as sorted POSIX paths from ``root``."""
    found = [f"src/{name}/extras/__init__.py", "tests/extras/__init__.py"]
    for zone in zones(name, kept):
        for path in (root / zone).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                found.append(path.relative_to(root).as_posix())
    return sorted(p for p in set(found) if (root / p).is_file())


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hashes(root: Path, paths: list[str]) -> dict[str, str]:
    """``path -> sha256`` of the files of ``paths`` that exist under ``root``."""
    return {p: digest((root / p).read_bytes()) for p in paths if (root / p).is_file()}


def git_head(root: Path) -> str | None:
    """The commit checked out at ``root``, or None outside a git repository."""
    proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def read(root: Path) -> dict | None:
    path = root / LOCK
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def write(root: Path, ref: str | None, files: dict[str, str]) -> Path:
    """Write the lock atomically (a temporary file renamed into place)."""
    path = root / LOCK
    body = {"ref": ref, "files": dict(sorted(files.items()))}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def record(root: Path, before: dict[str, str] | None) -> Path:
    """After ``make rename`` or ``make drop-extra`` rewrote files. Without a lock, every managed file as it is now is
    what upstream installed, at the checked-out commit. With one, deleted files leave it, and a file the script
    rewrote takes its new hash, but only where it was as installed (``before``: its hash just before, by its path
    now); an owner's edit stays an edit, so no update ever takes it for upstream's."""
    lock = read(root)
    name = package(root)
    if lock is None:
        return write(root, git_head(root), hashes(root, managed(root, name, extras(root, name))))
    files = {}
    for path, locked in lock["files"].items():
        if (root / path).is_file():
            unedited = before is not None and before.get(path) == locked
            files[path] = digest((root / path).read_bytes()) if unedited else locked
    return write(root, lock["ref"], files)
