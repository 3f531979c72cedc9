"""The import graph, read with ``ast`` (nothing is imported): imports flow data/ -> models/ -> task -> deploy/.

Rules (issue 13): ``models/`` imports neither Lightning nor ``data/``, the task or ``deploy/``; ``data/`` imports
neither the task nor ``deploy/``; only ``__main__`` (and ``deploy/`` itself) imports ``deploy/``; no cycles, counting
imports inside functions too (a cycle dodged with a local import is still a cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def package_dir(src: Path = SRC) -> Path:
    """The one package under ``src/`` (whatever it is called after ``make rename``)."""
    (package,) = [p for p in src.iterdir() if (p / "__init__.py").is_file()]
    return package


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """Every module name an ``import`` / ``from ... import`` anywhere in ``tree`` refers to (relative ones resolved)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # kept below only if it is a module
    return names


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports, plus the outside top-level names it imports."""
    package = package_dir(src)
    files = {module_name(p, src): p for p in package.rglob("*.py")}
    graph = {}
    for module, path in files.items():
        names = imported_names(ast.parse(path.read_text(), str(path)), module, path.name == "__init__.py")
        inside = {n for n in names if n in files} - {module}  # a package's `from . import sub` names itself
        outside = {n.split(".")[0] for n in names if n.split(".")[0] != package.name}
        graph[module] = inside | outside
    return graph


def violations(graph: dict[str, set[str]], package: str) -> list[str]:
    """Every broken rule, one line each."""

    def area(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ""

    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            inside = target.startswith(package + ".") or target == package
            if area(module) == "models" and (
                target in ("lightning", "pytorch_lightning") or (inside and area(target) in ("data", "task", "deploy"))
            ):
                found.append(
                    f"{module} imports {target}: models/ must not import Lightning, data/, the task or deploy/"
                )
            if area(module) == "data" and inside and area(target) in ("task", "deploy"):
                found.append(f"{module} imports {target}: data/ must not import the task or deploy/")
            if inside and area(target) == "deploy" and area(module) not in ("deploy", "__main__"):
                found.append(f"{module} imports {target}: only __main__ may import deploy/")
    found += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path back to its start) per strongly connected group of modules that import each other."""
    seen, found = set(), []
    for start in sorted(graph):
        stack, path, on_path = [(start, iter(sorted(graph.get(start, ()))))], [start], {start}
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(path.pop())
                seen.add(node)
            elif child in on_path:
                cycle = path[path.index(child) :] + [child]
                if not any(set(cycle) == set(c) for c in found):
                    found.append(cycle)
            elif child in graph and child not in seen:
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
                on_path.add(child)
    return found


def test_the_package_follows_the_import_rules() -> None:
    package = package_dir()
    assert violations(import_graph(), package.name) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "src"
    for name, text in {
        "pkg/__init__.py": "",
        "pkg/__main__.py": "import pkg.deploy.export\n",
        "pkg/task.py": "from pkg.models import net\nfrom pkg.data import base\n",
        "pkg/models/__init__.py": "",
        "pkg/models/net.py": "import torch\n",
        "pkg/data/__init__.py": "",
        "pkg/data/base.py": "import lightning\n",
        "pkg/deploy/__init__.py": "",
        "pkg/deploy/export.py": "from pkg import task\nfrom . import infer\n",
        "pkg/deploy/infer.py": "import numpy\n",
        **files,
    }.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return src


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    assert violations(import_graph(_tree(tmp_path, {})), "pkg") == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pkg/models/net.py": "import lightning.pytorch as pl\n"}, "pkg.models.net imports lightning"),
        ({"pkg/models/net.py": "from ..data import base\n"}, "pkg.models.net imports pkg.data.base"),
        ({"pkg/models/net.py": "def f():\n    from pkg import task\n"}, "pkg.models.net imports pkg.task"),
        ({"pkg/data/base.py": "from pkg.deploy import infer\n"}, "pkg.data.base imports pkg.deploy.infer"),
        ({"pkg/task.py": "import pkg.deploy.infer\n"}, "only __main__ may import deploy/"),
        ({"pkg/deploy/infer.py": "def f():\n    from pkg.deploy import export\n"}, "import cycle: pkg.deploy.export"),
    ],
)
def test_each_forbidden_import_is_reported(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    found = violations(import_graph(_tree(tmp_path, files)), "pkg")
    assert any(expected in line for line in found), found
