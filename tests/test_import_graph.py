"""The zones, read from the import graph with ``ast`` (nothing is imported), and where the next work goes.

Three zones, by who owns the code:

* the project (``cli``, ``task``, ``optim``, ``losses``, ``metrics``, ``models/``, ``data/``, ``callbacks/``): what an
  owner reads and edits. New recipes and tasks go here: a timm adapter in ``models/``, EMA or MixUp configs, a
  second task module beside ``task.py`` (each counted apart from the single-label budget below);
* the engine (``_engine/``): what they never need to open. Run handling, caches, leakage hashing and baselines go
  here: ``fit`` and the extras both use them. It imports only itself, and only with relative imports, so that it
  can be updated from upstream as one tree;
* the extras (``extras/<name>/``): optional features, each deleted whole. New subcommands go here (``cv``,
  ``lr-find``, ``optimize``, protocol serving). An extra may import another only where :data:`EXTRA_USES` says.

Only the entry point (``__main__``) reaches the extras, and it does so by name (their ``__init__`` holds only
constants), so nothing in the project or the engine imports one. ``models/`` never imports Lightning. No cycles,
counting imports inside functions (a cycle dodged with a local import is still a cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
#: An extra may import the extras listed here, and no other.
EXTRA_USES: dict[str, set[str]] = {
    "serve": {"deploy"},  # extra: serve
}
#: The project zone's lines on the single-label training path (cli -> task -> models -> data -> the callbacks the
#: default config lists), following imports within the zone.
# +15: the task's MixUp/CutMix and TTA arguments and hooks (logic in the engine); +30: val/select (what the
# checkpoints follow) and small_cnn's raw + standardised input; +13: the digits' split_file (cv's folds).
# +94: timm's models by name: the registry's prefixed families (+33), layer-wise LR decay's groups and per-group
# lr_scale in optim (+50), the task's layer_decay argument and the backbone's pretrained normalisation (+11).
# +48: the task switch (data.task linked into model.task, TASKS), multi-label's two task arguments and (N, K)
# targets in the dataset and the image-folder module (the multi-label task module itself is counted apart); +3
# where both landed in task.py's signature and docstring. +37: a timm backbone's resize respected: the CLI fills
# data.interpolation / data.crop_pct from its pretrained config and links the filter into the model (+29), the
# image-folder module's two arguments (+7) and the task's interpolation argument (+1). +2: data.StreamingDataModule's
# export (the module and its dataset are counted apart: an optional data source, deleted with the streaming extra).
# +29: small_cnn's global_pool (avg, max or catavgmax, timm's names), which the multi-label experiment config
# sets: an average dilutes a small object in a larger image; +6: a backbone argument its factory lacks is one line.
TRAINING_PATH_BUDGET = 2477
#: Backbone families beyond the default ``small_cnn`` and the second task (multi-label): project code an owner may
#: edit, counted apart from the single-label budget.
COUNTED_APART = ("models.torchvision_backbones", "models.timm_backbones", "models.timm_data_config", "multilabel_task")
COUNTED_APART += ("data.streaming", "data.streaming_dataset")  # extra: streaming
#: Modules at the top of the package (besides ``__init__``).
TOP_LEVEL_MODULES = 8


def package_dir(src: Path = SRC) -> Path:
    """The one package under ``src/`` (whatever it is called after ``make rename``)."""
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
    for module, targets in sorted(graph.items()):
        here = zone(module)
        for target in sorted(t for t in targets if t == package or t.startswith(package + ".")):
            there = zone(target)
            if here == "engine" and there != "engine":
                found.append(f"{module} imports {target}: the engine imports only itself")
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


def training_path(graph: dict[str, set[str]], package: str) -> list[str]:
    """The project modules that training end to end reaches: from ``cli`` and the modules ``configs/default.yaml``
    names (the data module, the callbacks, the scheduler, the task), following imports within the project."""
    default = (SRC.parent / "configs" / "default.yaml").read_text()
    named = {f"{package}.{m}" for m in ("cli", "task", "data", "callbacks", "optim") if f"{package}.{m}" in default}
    todo, reached = [f"{package}.cli", *sorted(named)], set()
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo += [t for t in graph.get(module, ()) if t.startswith(package) and zone(t) == "project"]
    return sorted(reached)


def test_the_package_follows_the_zones() -> None:
    graph, absolute, _ = import_graph()
    assert violations(graph, absolute, package_dir().name, EXTRA_USES) == []


def test_the_top_of_the_package_stays_small() -> None:
    top = sorted(p.name for p in package_dir().glob("*.py") if p.name != "__init__.py")
    assert len(top) <= TOP_LEVEL_MODULES, top


def test_training_end_to_end_reads_within_the_project_budget() -> None:
    graph, _, files = import_graph()
    package = package_dir().name
    path = [m for m in training_path(graph, package) if m not in {f"{package}.{a}" for a in COUNTED_APART}]
    lines = {module: len(files[module].read_text().splitlines()) for module in path}
    print("\n".join(f"{n:5} {m}" for m, n in lines.items()) + f"\n{sum(lines.values()):5} in {len(lines)} files")
    assert sum(lines.values()) <= TRAINING_PATH_BUDGET, lines


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
        "pkg/_engine/errors.py": "",
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
