"""The zones, read from the import graph with ``ast`` (nothing is imported), and where the next work goes.

Three zones, by who owns the code:

* the project (``cli``, ``tasks/``, ``optim``, ``losses``, ``metrics``, ``models/``, ``data/``, ``callbacks/``): what
  an owner reads and edits. New recipes and tasks go here: a timm adapter in ``models/``, EMA or MixUp configs, a
  task module (and its torch-free answers) in ``tasks/``;
* the engine (``_engine/``): what they never need to open. Run handling, caches and leakage hashing go here:
  ``fit`` and the extras both use them. It imports only itself, with relative imports, as one tree, and the public
  ``errors`` (the classes it reports), which imports nothing of ours;
* the extras (``extras/<name>/``): optional features, each a folder of its own. New subcommands go here (``cv``,
  ``lr-find``, ``optimize``, protocol serving). An extra may import another only where :data:`EXTRA_USES` says.

Only the entry point (``__main__``) reaches the extras, and it does so by name (their ``__init__`` holds only
constants), so nothing in the project or the engine imports one. ``models/`` never imports Lightning. No cycles,
counting imports inside functions (a cycle dodged with a local import is still a cycle). Downstream code asks a task's
answers and never tests a task's name, and those answers import neither torch nor Lightning.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
#: An extra may import the extras listed here, and no other.
EXTRA_USES: dict[str, set[str]] = {
    "serve": {"deploy"},
}
#: Modules at the top of the package (besides ``__init__``): the entry points (``__main__``, ``cli``, ``new``,
#: ``update``, ``schema``, ``convert``) and the public helpers a task module imports (``errors``, ``losses``,
#: ``metrics``, ``optim``, ``tta``, ``batch_mix``, ``baseline``, ``plots``, ``thresholds``).
TOP_LEVEL_MODULES = 15


def package_dir(src: Path = SRC) -> Path:
    """The one package under ``src/``."""
    (package,) = [p for p in src.iterdir() if (p / "__init__.py").is_file()]
    return package


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(tree: ast.Module, module: str, is_package: bool) -> list[tuple[str, bool]]:
    """``(module name, relative?)`` for every ``import`` / ``from ... import`` anywhere in ``tree`` (relative ones
    resolved; ``from a import b`` also yields ``a.b``, kept below only if it is a module)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, False) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            found += [(base, bool(node.level)), *((f"{base}.{a.name}", bool(node.level)) for a in node.names)]
    return found


def import_graph(src: Path = SRC) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, Path]]:
    """``(graph, absolute, files)``: module -> the package's modules it imports plus the outside top-level names;
    module -> the package's own modules it imports by absolute name; module -> file."""
    package = package_dir(src)
    files = {module_name(p, src): p for p in package.rglob("*.py")}
    graph, absolute = {}, {}
    for module, path in files.items():
        found = imports_of(ast.parse(path.read_text(), str(path)), module, path.name == "__init__.py")
        inside = {n for n, _ in found if n in files} - {module}  # a package's `from . import sub` names itself
        graph[module] = inside | {n.split(".")[0] for n, _ in found if n.split(".")[0] != package.name}
        absolute[module] = {n for n, relative in found if n in files and not relative} - {module}
    return graph, absolute, files


def zone(module: str) -> str:
    """``entry``, ``project``, ``engine``, ``extras`` (the package that holds them) or ``extra:<name>``."""
    parts = module.split(".")[1:]
    if parts[:1] == ["__main__"]:
        return "entry"
    if parts[:1] == ["_engine"]:
        return "engine"
    if parts[:1] == ["extras"]:
        return f"extra:{parts[1]}" if len(parts) > 1 else "extras"
    return "project"


def violations(
    graph: dict[str, set[str]], absolute: dict[str, set[str]], package: str, extra_uses: dict[str, set[str]]
) -> list[str]:
    """Every broken rule, one line each (``extra_uses``: which extras each extra may import)."""
    found = []
    errors = f"{package}.errors"
    for module, targets in sorted(graph.items()):
        here = zone(module)
        for target in sorted(t for t in targets if t == package or t.startswith(package + ".")):
            there = zone(target)
            if here == "engine" and there != "engine" and target != errors:
                found.append(f"{module} imports {target}: the engine imports only itself (and {errors})")
            if module == errors:
                found.append(f"{module} imports {target}: {errors} imports nothing of the package")
            if there.startswith("extra:") and here not in (there, "entry"):
                name = there.split(":")[1]
                if not (here.startswith("extra:") and name in extra_uses.get(here.split(":")[1], set())):
                    found.append(f"{module} imports {target}: only the entry point (or a declared extra) uses an extra")
        if module.split(".")[1:2] == ["models"] and targets & {"lightning", "pytorch_lightning"}:
            found.append(f"{module} imports Lightning: models/ are plain nn.Modules")
        for target in sorted(absolute.get(module, ())):
            if here == "engine" and zone(target) == "engine":
                found.append(f"{module} imports {target} by absolute name: the engine imports itself relatively")
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


def test_the_package_follows_the_zones() -> None:
    graph, absolute, _ = import_graph()
    assert violations(graph, absolute, package_dir().name, EXTRA_USES) == []


def test_the_top_of_the_package_stays_small() -> None:
    top = sorted(p.name for p in package_dir().glob("*.py") if p.name != "__init__.py")
    assert len(top) <= TOP_LEVEL_MODULES, top


def task_names(package: Path) -> set[str]:
    """The ``task_name`` / ``name`` / ``target_kind`` string each task module and answers module under ``tasks/``
    and each target kind under ``_engine/targets/`` assigns."""
    names = set()
    for path in [*(package / "tasks").glob("*.py"), *(package / "_engine" / "targets").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value:
                if any(isinstance(t, ast.Name) and t.id in ("task_name", "name", "target_kind") for t in node.targets):
                    names.add(node.value.value)
    return names


def test_downstream_code_asks_the_task_and_never_tests_its_name() -> None:
    package = package_dir()
    names = task_names(package)
    assert {"single_label", "multilabel", "regression", "class", "label_set", "value"} <= names, names
    found = []
    for extra in ("deploy", "serve", "cv", "tune", "inspect"):
        for path in sorted((package / "extras" / extra).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Compare):
                    continue
                for constant in (c.value for c in ast.walk(node) if isinstance(c, ast.Constant)):
                    if constant in names:
                        found.append(f"{path.relative_to(package)}:{node.lineno} compares with {constant!r}")
    assert found == [], "ask the task's answers or the targets' kind instead:\n" + "\n".join(found)


def test_what_infer_and_serve_use_of_a_task_imports_neither_torch_nor_lightning() -> None:
    graph, _, _ = import_graph()
    package = package_dir().name
    answers = [m for m in graph if m.startswith(f"{package}.tasks.") and m.endswith("answers")]
    assert f"{package}.tasks.answers" in answers
    todo, reached = list(answers), set()
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo += [t for t in graph.get(module, ()) if t.startswith(package + ".")]
    heavy = {m: graph[m] & {"torch", "lightning", "torchvision", "torchmetrics"} for m in reached}
    assert not {m: h for m, h in heavy.items() if h}, heavy


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "src"
    for name, text in {
        "pkg/__init__.py": "",
        "pkg/__main__.py": "import importlib\nimport pkg.cli\n",
        "pkg/cli.py": "from pkg import task\nfrom pkg._engine.run import claim\n",
        "pkg/task.py": "import lightning\nfrom pkg.models import net\nfrom pkg.data import base\n",
        "pkg/models/__init__.py": "",
        "pkg/models/net.py": "import torch\nfrom pkg._engine import errors\n",
        "pkg/data/__init__.py": "",
        "pkg/data/base.py": "import lightning\n",
        "pkg/_engine/__init__.py": "",
        "pkg/errors.py": "",
        "pkg/_engine/errors.py": "from pkg.errors import UsageError\n",
        "pkg/_engine/run/__init__.py": "",
        "pkg/_engine/run/claim.py": "from ..errors import UsageError\n",
        "pkg/extras/__init__.py": "",
        "pkg/extras/alpha/__init__.py": "",
        "pkg/extras/alpha/export.py": "from pkg import task\nfrom pkg._engine import errors\nfrom . import infer\n",
        "pkg/extras/alpha/infer.py": "import numpy\n",
        "pkg/extras/beta/__init__.py": "",
        "pkg/extras/beta/app.py": "from pkg.extras.alpha import infer\n",
        "pkg/extras/gamma/__init__.py": "",
        "pkg/extras/gamma/command.py": "from pkg.cli import main\n",
        **files,
    }.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return src


def _violations(tmp_path: Path, files: dict[str, str]) -> list[str]:
    graph, absolute, _ = import_graph(_tree(tmp_path, files))
    return violations(graph, absolute, "pkg", {"beta": {"alpha"}})


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    assert _violations(tmp_path, {}) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pkg/_engine/errors.py": "from pkg import task\n"}, "the engine imports only itself"),
        ({"pkg/_engine/errors.py": "def f():\n    from pkg.extras.alpha import infer\n"}, "the engine imports only"),
        ({"pkg/_engine/run/claim.py": "from pkg._engine.errors import UsageError\n"}, "imports itself relatively"),
        ({"pkg/errors.py": "from pkg._engine import errors\n"}, "pkg.errors imports nothing of the package"),
        ({"pkg/task.py": "import pkg.extras.alpha.infer\n"}, "only the entry point (or a declared extra)"),
        ({"pkg/models/net.py": "from pkg.extras.gamma import command\n"}, "only the entry point (or a declared extra)"),
        ({"pkg/extras/gamma/command.py": "from pkg.extras.alpha import export\n"}, "(or a declared extra)"),
        ({"pkg/extras/alpha/infer.py": "from pkg.extras.beta import app\n"}, "(or a declared extra)"),
        ({"pkg/models/net.py": "import lightning.pytorch as pl\n"}, "models/ are plain nn.Modules"),
        ({"pkg/extras/alpha/infer.py": "def f():\n    from pkg.extras.alpha import export\n"}, "import cycle"),
    ],
    ids=[
        "engine-imports-project",
        "engine-imports-extra",
        "engine-absolute-self-import",
        "public-errors-import-the-package",
        "project-imports-extra",
        "models-import-extra",
        "undeclared-extra-use",
        "reverse-of-a-declared-use",
        "models-import-lightning",
        "cycle",
    ],
)
def test_each_forbidden_import_is_reported(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    found = _violations(tmp_path, files)
    assert any(expected in line for line in found), found
