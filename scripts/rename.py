"""Rename the package: ``make rename NAME=my_project`` (or ``python scripts/rename.py my_project``).

Moves ``src/<old>/`` to ``src/<new>/`` and replaces the old name in every text file of the repository: imports,
the configs' class paths, the tests, the docs, ``pyproject.toml`` (distribution name and console script) and the
``<OLD>_*`` environment variables. Case is kept: ``litstarter`` -> ``my_project``, ``LITSTARTER`` -> ``MY_PROJECT``,
``Litstarter`` -> ``My_project``. A name of another length changes line lengths, so the renamed Python files are
then formatted with ruff (the repository's venv's, the running Python's, or one on the PATH; else run
``make format``). Run it on a clean checkout (review it with ``git diff``), then reinstall (``make install``) so
the console script takes the new name. Nothing but the standard library is needed.
"""

from __future__ import annotations

import argparse
import keyword
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Folders never touched: version control, environments, outputs and caches.
SKIP_DIRS = {".git", ".venv", "venv", "runs", "lightning_logs", "__pycache__", ".pytest_cache", ".ruff_cache", "build"}
SKIP_SUFFIXES = {".egg-info"}


def current_name(root: Path = ROOT) -> str:
    """The package under ``src/`` (the one folder with an ``__init__.py``)."""
    packages = sorted(p.name for p in (root / "src").iterdir() if (p / "__init__.py").is_file())
    if len(packages) != 1:
        raise SystemExit(f"rename: expected one package under {root / 'src'}, found {packages}")
    return packages[0]


def check_name(new: str, old: str, root: Path = ROOT) -> None:
    """Refuse a name that is not a lowercase Python identifier, is a keyword, or is taken."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", new) or keyword.iskeyword(new):
        raise SystemExit(f"rename: NAME={new!r} must be a lowercase Python identifier, e.g. my_project")
    if new == old:
        raise SystemExit(f"rename: the package is already called {old!r}")
    if (root / "src" / new).exists():
        raise SystemExit(f"rename: {root / 'src' / new} already exists")


def text_files(root: Path = ROOT):
    """Every text file of the repository outside :data:`SKIP_DIRS`."""
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if any(p in SKIP_DIRS or Path(p).suffix in SKIP_SUFFIXES for p in parts) or not path.is_file():
            continue
        try:
            yield path, path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):  # binary (images, archives): nothing to rename
            continue


def replacer(old: str, new: str):
    """A function renaming ``old`` in a text, case kept, wherever it is not part of a longer word."""
    cases = {old: new, old.upper(): new.upper(), old.capitalize(): new.capitalize()}
    pattern = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, cases)) + r")(?![a-z0-9])")
    return lambda text: pattern.sub(lambda m: cases[m.group(1)], text)


def rename(new: str, root: Path = ROOT) -> list[Path]:
    """Rename the package to ``new``; returns the files whose text changed (at their new paths)."""
    old = current_name(root)
    check_name(new, old, root)
    sub = replacer(old, new)
    changed = []
    for path, text in text_files(root):
        renamed = sub(text)
        if renamed != text:
            path.write_text(renamed, encoding="utf-8")
            changed.append(path)
    (root / "src" / old).rename(root / "src" / new)
    package, moved = root / "src" / old, root / "src" / new
    return [moved / p.relative_to(package) if p.is_relative_to(package) else p for p in changed]


def reformat(files: list[Path], root: Path = ROOT) -> bool:
    """``ruff format`` the given Python files (a rename or a deletion changed their lines); False without ruff."""
    candidates = [root / ".venv" / "bin" / "ruff", Path(sys.executable).parent / "ruff"]
    ruff = next((str(c) for c in candidates if c.is_file()), None) or shutil.which("ruff")
    if ruff is None:
        return False
    python = [str(p) for p in files if p.suffix == ".py"]
    if python:
        subprocess.run([ruff, "format", "--quiet", *python], cwd=root, check=True)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make rename NAME=<package>", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="The new package name: a lowercase Python identifier.")
    parser.add_argument("--root", type=Path, default=ROOT, help="The repository to rename (default: this one).")
    args = parser.parse_args(argv)
    old = current_name(args.root)
    changed = rename(args.name, args.root)
    print(f"renamed {old} -> {args.name}: src/{args.name}/ and {len(changed)} files")
    if not reformat(changed, args.root):
        print("ruff not found: run `make format` (line lengths changed with the name)")
    print("next: make install   (reinstalls, so the console script is called " + args.name + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
