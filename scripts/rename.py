"""Rename the package: ``make rename NAME=my_project`` (or ``python scripts/rename.py my_project``).

Moves ``src/<old>/`` to ``src/<new>/`` and replaces the old name in every text file of the repository: imports,
the configs' class paths, the tests, the docs, ``pyproject.toml`` (distribution name and console script) and the
``<OLD>_*`` environment variables. Case is kept: ``litstarter`` -> ``my_project``, ``LITSTARTER`` -> ``MY_PROJECT``,
``Litstarter`` -> ``My_project``. A new name changes line lengths and import order, so the renamed Python files
are then import-sorted and formatted with ruff (the repository's venv's, the running Python's, or one on the PATH;
else run ``make format``). Run it on a clean checkout (review it with ``git diff``), then reinstall
(``make install``) so the console script takes the new name. Nothing but the standard library is needed.

A name something else already answers to is refused (exit 2, one line, nothing changed; :func:`check_name` lists
what): ``torch``, ``json``, ``tests``. The LICENSE is left alone: it names its copyright holder, not the package.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import shutil
import subprocess
import sys
from pathlib import Path

import engine_lock  # scripts/ is on the path when a script here runs

ROOT = Path(__file__).resolve().parents[1]
#: Folders never touched: version control, environments, outputs and caches.
SKIP_DIRS = {".git", ".venv", "venv", "runs", "lightning_logs", "__pycache__", ".pytest_cache", ".ruff_cache", "build"}
SKIP_SUFFIXES = {".egg-info"}
#: Files never rewritten: the licence names its copyright holder, not the package.
KEEP_FILES = {"LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING"}
VENV = ".venv"


class Refused(Exception):
    """A name ``make rename`` will not take (or a tree it cannot rename), in one sentence."""


def current_name(root: Path = ROOT) -> str:
    """The package under ``src/`` (the one folder with an ``__init__.py``)."""
    packages = sorted(p.name for p in (root / "src").iterdir() if (p / "__init__.py").is_file())
    if len(packages) != 1:
        raise Refused(f"expected one package under {root / 'src'}, found {packages}")
    return packages[0]


def normalise(name: str) -> str:
    """A distribution name as pip compares it (PEP 503): runs of ``-``, ``_`` and ``.`` are one ``-``, lowercase."""
    return re.sub(r"[-_.]+", "-", name).lower()


def check_name(new: str, old: str, root: Path = ROOT) -> None:
    """Refuse a name that is not a lowercase Python identifier, or that something else already answers to.

    Whatever the environment: a keyword, the current name, ``src/<new>``, a module of the standard library, a
    folder or module of this repository (``tests``, ``scripts``, a script's name) and a dependency that
    ``pyproject.toml`` declares, compared as pip normalises names. Then, in the repository's ``.venv`` when it
    exists and in the Python running this: a name that is importable there or that pip would normalise into a
    distribution installed there. Before ``make install`` (no ``.venv`` yet), what a dependency provides under
    another name (``sklearn``, ``yaml``) is only known where the running Python has it installed.
    """
    named = f"NAME={new}"
    if not re.fullmatch(r"[a-z][a-z0-9_]*", new) or keyword.iskeyword(new):
        raise Refused(f"NAME={new!r} must be a lowercase Python identifier, not a keyword, e.g. my_project")
    if new == old:
        raise Refused(f"the package is already called {old!r}")
    if (root / "src" / new).exists():
        raise Refused(f"{named} is taken: {root / 'src' / new} already exists")
    if new in getattr(sys, "stdlib_module_names", ()):
        raise Refused(f"{named}: {new} is a module of Python's standard library; choose another name")
    for where in ours(root):
        if (where.name if where.is_dir() else where.stem) == new:
            shown = where.relative_to(root).as_posix() + ("/" if where.is_dir() else "")
            raise Refused(f"{named}: {shown} of this repository is already importable as {new}; choose another name")
    for requirement in declared_dependencies(root, old):
        if normalise(requirement_name(requirement)) == normalise(new):
            spelt = "" if requirement_name(requirement) == new else f"pip normalises {new} to {normalise(new)}, and "
            raise Refused(
                f"{named}: {spelt}{requirement_name(requirement)} is a dependency of this project "
                f"(pyproject.toml lists {requirement}); choose another name"
            )
    for label, python in interpreters(root):
        found = probe(python, label, new, root)
        if found:
            raise Refused(f"{named}: {found}; choose another name")


def ours(root: Path) -> list[Path]:
    """What this repository itself makes importable: its top-level folders and modules (pytest and ``python -m``
    put the root on the path) and its scripts' modules (``python scripts/x.py`` puts ``scripts/`` first)."""
    top = [p for p in root.iterdir() if p.name not in SKIP_DIRS and (p.is_dir() or p.suffix == ".py")]
    return sorted(top + list((root / "scripts").glob("*.py")))


def declared_dependencies(root: Path, old: str) -> list[str]:
    """The requirements ``pyproject.toml`` declares (dependencies and every extra), less the project's own."""
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # Python >= 3.11

        project = tomllib.loads(text).get("project", {})
        found = [*project.get("dependencies", []), *sum(project.get("optional-dependencies", {}).values(), [])]
    except ModuleNotFoundError:  # Python 3.10: the quoted items of [project]'s dependencies and its extras' arrays
        tables = re.findall(r"^\[project(\.optional-dependencies)?\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
        found = []
        for extras, table in tables:
            code = re.sub(r'#[^"\n]*$', "", table, flags=re.M)  # comments off
            key = r"[\w-]+" if extras else "dependencies"
            for array in re.findall(rf"^\s*{key}\s*=\s*\[(.*?)\]\s*$", code, re.M | re.S):
                found += re.findall(r'"([^"]+)"', array)
    return [r for r in found if normalise(requirement_name(r)) != normalise(old)]


def requirement_name(requirement: str) -> str:
    """``torch`` of ``torch>=2.6,<3``, ``uvicorn`` of ``uvicorn[standard]>=0.34``."""
    return re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)


def interpreters(root: Path) -> list[tuple[str, str]]:
    """``(label, python)`` for each Python the renamed package is imported by: the repository's ``.venv`` (what
    ``make install`` creates; ``make rename`` itself runs the system ``python3``, which does not see it) and the
    Python running this script, unless that is the venv's."""
    found = []
    venv = root / VENV
    python = next((p for p in (venv / "bin" / "python", venv / "Scripts" / "python.exe") if p.is_file()), None)
    if python is not None:
        found.append((VENV, str(python)))
    if python is None or Path(sys.prefix).resolve() != venv.resolve():
        found.append((f"{sys.executable} (the Python running this)", sys.executable))
    return found


#: Run by each interpreter of :func:`interpreters` (isolated: neither the current folder nor PYTHONPATH is on its
#: path): one JSON line saying whether NAME is in its standard library, where it imports NAME from, and which
#: installed distributions pip would take NAME for. An earlier install of this repository (ROOT/src) is no clash.
PROBE = r"""
import importlib.metadata as md, importlib.util, json, re, sys
from pathlib import Path
from urllib.parse import unquote, urlparse
name, root = sys.argv[1], Path(sys.argv[2]).resolve()
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
ours = lambda path: bool(path) and (Path(path).resolve() == root or Path(path).resolve().is_relative_to(root / "src"))
try:
    spec = importlib.util.find_spec(name)
    where = spec and (spec.origin or next(iter(spec.submodule_search_locations or []), None) or "a namespace")
except Exception as e:  # a module whose finder fails is still a module
    where = f"a module its finder fails on: {type(e).__name__}"
if where and ours(where):
    where = None
def theirs(d):  # not an install of this repository (an editable one: ROOT its URL, ROOT/src its metadata)
    url = json.loads(d.read_text("direct_url.json") or "{}").get("url", "")
    return not ours(d.locate_file("")) and not ours(unquote(urlparse(url).path))
dists = sorted(
    d.metadata["Name"] for d in md.distributions()
    if d.metadata["Name"] and norm(d.metadata["Name"]) == norm(name) and theirs(d)
)
by = sorted(set(getattr(md, "packages_distributions", dict)().get(name, [])))  # Python >= 3.10
stdlib = name in getattr(sys, "stdlib_module_names", ())
print(json.dumps({"stdlib": stdlib, "where": where, "dists": dists, "by": by}))
"""


def probe(python: str, label: str, new: str, root: Path) -> str | None:
    """Why ``python`` already answers to ``new``, as a clause, or None."""
    try:
        proc = subprocess.run(
            [python, "-I", "-c", PROBE, new, str(root)], capture_output=True, text=True, timeout=60, cwd=root
        )
        facts = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        raise Refused(f"could not ask {python} whether {new} is taken there; fix or remove {label}") from None
    if facts["stdlib"]:
        return f"{new} is a module of the standard library of {label}"
    if facts["where"]:
        by = f", provided by {' and '.join(facts['by'])}" if facts["by"] else ""
        return f"{new} is already importable in {label} (from {facts['where']}{by})"
    if facts["dists"]:
        return f"pip normalises {new} to {normalise(new)}, the distribution {facts['dists'][0]} installed in {label}"
    return None


def text_files(root: Path = ROOT):
    """Every text file of the repository outside :data:`SKIP_DIRS`."""
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if any(p in SKIP_DIRS or Path(p).suffix in SKIP_SUFFIXES for p in parts) or not path.is_file():
            continue
        if parts[0] in KEEP_FILES:
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


def find_ruff(root: Path = ROOT) -> str | None:
    """The ruff to format with: the repository's venv's, the running Python's, or one on the PATH."""
    candidates = [root / ".venv" / "bin" / "ruff", Path(sys.executable).parent / "ruff"]
    return next((str(c) for c in candidates if c.is_file()), None) or shutil.which("ruff")


#: What :func:`reformat` runs, in order: a renamed import can change the sort order (``run_litstarter`` sorts after
#: ``run_cli``, ``run_acme`` before it), and a new name's length the line breaks.
RUFF_PASSES = (["check", "--select", "I", "--fix", "--exit-zero", "--quiet"], ["format", "--quiet"])


def reformat(files: list[Path], root: Path = ROOT) -> bool:
    """Sort the imports of the given Python files and ``ruff format`` them (a rename or a deletion changed their
    lines); False without ruff."""
    ruff = find_ruff(root)
    if ruff is None:
        return False
    python = [str(p) for p in files if p.suffix == ".py"]
    for args in RUFF_PASSES if python else ():
        subprocess.run([ruff, *args, *python], cwd=root, check=True)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make rename NAME=<package>", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="The new package name: a lowercase Python identifier.")
    parser.add_argument("--root", type=Path, default=ROOT, help="The repository to rename (default: this one).")
    args = parser.parse_args(argv)
    try:
        old = current_name(args.root)
        if args.name == old:
            print(f"the package is already called {old}: nothing to do")
            return 0
        installed = engine_lock.read(args.root)  # a second rename: the lock's paths are renamed with the text
        sub = replacer(old, args.name)
        before = (
            {sub(p): h for p, h in engine_lock.hashes(args.root, list(installed["files"])).items()}
            if installed
            else None
        )
        changed = rename(args.name, args.root)
    except Refused as refused:
        print(f"rename: {refused}", file=sys.stderr)
        return 2
    print(f"renamed {old} -> {args.name}: src/{args.name}/ and {len(changed)} files")
    if not reformat(changed, args.root):
        print("ruff not found: run `make format` (line lengths changed with the name)")
    lock = engine_lock.record(args.root, before)
    print(f"recorded the engine's and the extras' files in {lock.name}: make update-engine takes upstream's fixes")
    print("next: make install   (reinstalls, so the console script is called " + args.name + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
