"""Delete an optional feature whole: ``make drop-extra NAME=deploy`` (or ``python scripts/drop_extra.py deploy``).

An extra is ``src/<package>/extras/<name>/``, the paths its ``__init__.py`` lists in ``PARTS`` (its tests, docs page,
benchmarks, examples, configs), and every line elsewhere that carries its marker: a line ending in
``# extra: <name>`` (``<!-- extra: <name> -->`` in Markdown), or a block from ``>>> extra: <name>`` to
``<<< extra: <name>`` (its pyproject extra, its make targets, its rows in the docs). The extras that import it go
too (``serve`` imports ``deploy``), and the script says so. The Python files it edited are then formatted with ruff,
as ``make rename`` does, and configs/schema.json is written again if it named a deleted module's classes (as
``make schema`` does). Run it on a clean checkout (review with ``git diff``), then ``make install``.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import engine_lock  # scripts/ is on the path when a script here runs
from rename import reformat

ROOT = Path(__file__).resolve().parents[1]
#: Folders never touched: version control, environments, outputs and caches.
SKIP_DIRS = {".git", ".venv", "venv", "runs", "lightning_logs", "__pycache__", ".pytest_cache", ".ruff_cache", "build"}


def package_dir(root: Path) -> Path:
    """``src/<package>/``: the one folder under ``src/`` with an ``__init__.py``."""
    (package,) = [p for p in (root / "src").iterdir() if (p / "__init__.py").is_file()]
    return package


def extras_dir(root: Path) -> Path:
    return package_dir(root) / "extras"


def constant(path: Path, name: str, default=()):
    """A module-level constant of ``path``, read with ``ast`` (nothing is imported)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        else:
            continue
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            return ast.literal_eval(node.value)
    return default


def extras(root: Path) -> list[str]:
    """The extras present, by folder name."""
    return sorted(p.name for p in extras_dir(root).iterdir() if (p / "__init__.py").is_file())


def users_of(name: str, root: Path) -> list[str]:
    """The other extras whose code imports extra ``name``."""
    target = f"{package_dir(root).name}.extras.{name}"
    found = []
    for other in extras(root):
        if other == name:
            continue
        for path in (extras_dir(root) / other).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                modules += [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
                if any(m == target or m.startswith(target + ".") for m in modules):
                    found.append(other)
    return sorted(set(found))


def with_users(names: list[str], root: Path) -> list[str]:
    """``names`` and every extra that imports one of them, transitively."""
    todo, closed = list(names), []
    while todo:
        name = todo.pop()
        if name not in closed:
            closed.append(name)
            todo += users_of(name, root)
    return closed


def parts(name: str, root: Path) -> list[Path]:
    """Everything of extra ``name`` that is a path: its folder and its ``PARTS``."""
    folder = extras_dir(root) / name
    return [folder, *(root / p for p in constant(folder / "__init__.py", "PARTS"))]


def without_marked_lines(text: str, name: str) -> str:
    """``text`` without the lines and blocks that carry extra ``name``'s marker."""
    line_marker = re.compile(rf"(#|<!--)\s*extra:\s*{re.escape(name)}\b")
    opens, closes = re.compile(rf">>> extra:\s*{re.escape(name)}\b"), re.compile(rf"<<< extra:\s*{re.escape(name)}\b")
    kept, in_block = [], False
    for line in text.splitlines(keepends=True):
        if opens.search(line):
            in_block = True
        elif closes.search(line):
            in_block = False
        elif not in_block and not line_marker.search(line):
            kept.append(line)
    return "".join(kept)


def text_files(root: Path):
    """Every text file of the repository outside :data:`SKIP_DIRS`, with its text."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).parts
        if any(p in SKIP_DIRS or p.endswith(".egg-info") for p in rel) or not path.is_file():
            continue
        try:
            yield path, path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):  # binary files carry no markers
            continue


def drop(names: list[str], root: Path = ROOT) -> list[str]:
    """Delete the extras ``names`` and those that import them; returns every extra deleted."""
    unknown = sorted(set(names) - set(extras(root)))
    if unknown:
        close = difflib.get_close_matches(unknown[0], extras(root), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise SystemExit(f"drop-extra: no extra {unknown[0]!r}; {hint}the extras here are {', '.join(extras(root))}")
    dropped = with_users(names, root)
    installed = engine_lock.read(root)
    before = engine_lock.hashes(root, list(installed["files"])) if installed else {}
    modules = [module for name in dropped for module in modules_of(parts(name, root), root)]
    for name in dropped:
        for path in parts(name, root):
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
    changed = []
    for path, text in text_files(root):
        kept = text
        for name in dropped:
            kept = without_marked_lines(kept, name)
        if kept != text:
            path.write_text(kept, encoding="utf-8")
            changed.append(path)
    if not reformat(changed, root):  # a table left with one row, say: as ruff would write it
        print("ruff not found: run `make format` (the files edited above may need it)")
    engine_lock.record(root, before)  # so make update-engine keeps the extra deleted, and edits stay edits
    rewrite_schema(modules, root)
    return dropped


def modules_of(paths: list[Path], root: Path) -> list[str]:
    """The dotted names of the modules under ``src/`` among ``paths`` (files, or folders of them)."""
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*.py")) if p.is_dir() else [])]
    src = root / "src"
    return [".".join(f.relative_to(src).with_suffix("").parts) for f in files if f.suffix == ".py" and src in f.parents]


def rewrite_schema(modules: list[str], root: Path) -> None:
    """Write configs/schema.json again if it names a class of one of the deleted ``modules`` (``make schema``: it
    imports the project, so it runs on ``.venv``'s Python, else this one); else say to run ``make schema``."""
    schema, script = root / "configs" / "schema.json", root / "scripts" / "config_schema.py"
    if not schema.is_file() or not script.is_file():
        return
    text = schema.read_text(encoding="utf-8")
    if not any(f'"{module}.' in text for module in modules):
        return
    venv = root / ".venv" / "bin" / "python"
    python = str(venv) if venv.is_file() else sys.executable
    paths = [str(root / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]  # this tree's package first
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    proc = subprocess.run([python, str(script)], cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode == 0:
        print("configs/schema.json written again, without the deleted classes")
    else:
        print("configs/schema.json still names the deleted classes: run `make schema` after `make install`")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make drop-extra NAME=<extra>", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+", help="The extras to delete (folders under src/<package>/extras/).")
    parser.add_argument("--root", type=Path, default=ROOT, help="The repository (default: this one).")
    args = parser.parse_args(argv)
    dropped = drop(args.names, args.root)
    also = sorted(set(dropped) - set(args.names))
    used = f" ({', '.join(also)} used {'it' if len(args.names) == 1 else 'them'})" if also else ""
    print(f"deleted the extra{'s' * (len(dropped) > 1)} {', '.join(sorted(dropped))}{used}")
    print("next: make install   (the venv keeps the packages they needed until you rebuild it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
