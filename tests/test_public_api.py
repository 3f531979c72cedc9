"""The public API is ``docs/api.md``: every name it lists imports, each public module's ``__all__`` is exactly what
the page lists for it, and the five task modules (copied into projects as ``task.py``) import public names only,
define their loss and their four steps, and subclass ``ImageTask``. The version is one number everywhere.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re

import pytest
import tomllib

from tests.helpers import REPO

PAGE = REPO / "docs" / "api.md"
SRC = REPO / "src"
#: Modules under the package that are not API, and why: a project never imports them.
NOT_API = {
    "__main__": "the `litstarter` command",
    "new": "the `litstarter new` command",
    "update": "the `litstarter update` command",
    "schema": "the `litstarter schema` command",
    "convert": "the `litstarter convert` command",
    "extras": "the extras' command modules",
}
TASK_MODULES = ("classification", "multilabel", "regression", "segmentation", "detection")
STEPS = ("loss", "training_step", "validation_step", "test_step", "predict_step")


def package() -> str:
    """The package's name: the one package under ``src/``."""
    (found,) = [p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()]
    return found


def listed() -> dict[str, list[str]]:
    """Each module the page lists (its ``## `module``` headings), with the names in its table's first column."""
    pages: dict[str, list[str]] = {}
    module = None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        heading = re.fullmatch(r"## `([\w.]+)`", line)
        if heading:
            module = heading[1]
            pages[module] = []
        elif line.startswith("## "):
            module = None
        elif module and (row := re.match(r"\| `(\w+)` \|", line)):
            pages[module].append(row[1])
    return pages


def public_modules() -> set[str]:
    """The package, its modules and its packages whose names do not start with ``_``, less :data:`NOT_API`."""
    root = SRC / package()
    found = {package()}
    for path in root.iterdir():
        name = path.stem if path.suffix == ".py" else path.name
        is_module = path.suffix == ".py" or (path / "__init__.py").is_file()
        if is_module and not name.startswith("_") and name not in NOT_API:
            found.add(f"{package()}.{name}")
    return found


def test_the_page_lists_every_public_module_and_only_those() -> None:
    assert set(listed()) == public_modules()


@pytest.mark.parametrize("module", sorted(listed()))
def test_every_name_on_the_page_imports_and_is_exactly_the_modules_all(module: str) -> None:
    names = listed()[module]
    imported = importlib.import_module(module)
    missing = [name for name in names if not hasattr(imported, name)]
    assert not missing, f"docs/api.md lists {missing} under {module}, which does not have them"
    assert len(names) == len(set(names)), f"docs/api.md lists a name twice under {module}"
    exported = getattr(imported, "__all__", None)
    assert exported is not None, f"{module} has no __all__"
    assert not set(exported) - set(names), f"{module}.__all__ holds {sorted(set(exported) - set(names))}: list them"
    assert not set(names) - set(exported), f"docs/api.md lists {sorted(set(names) - set(exported))}: not in __all__"


def test_a_public_name_has_a_docstring() -> None:
    undocumented = []
    for module, names in listed().items():
        imported = importlib.import_module(module)
        for name in names:
            value = getattr(imported, name)
            if callable(value) and getattr(value, "__module__", "").startswith(package()) and not value.__doc__:
                undocumented.append(f"{module}.{name}")
    assert not undocumented


def test_the_task_base_stays_light_to_import() -> None:
    """``litstarter.tasks`` imports its names lazily: answers are read by the torch-free ``infer`` and ``serve``."""
    tree = ast.parse((SRC / package() / "tasks" / "__init__.py").read_text(encoding="utf-8"))
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(getattr(n, "module", None) == "__future__" or n.names[0].name == "importlib" for n in imports)


def imports_of(tree: ast.Module) -> list[tuple[str, str]]:
    """``(module, name)`` for every name imported anywhere in ``tree`` (``name`` is ``""`` for ``import x``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found += [("." * node.level + (node.module or ""), alias.name) for alias in node.names]
    return found


def task_module(name: str) -> ast.Module:
    return ast.parse((SRC / package() / "tasks" / f"{name}.py").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", TASK_MODULES)
def test_a_task_module_imports_public_names_only(name: str) -> None:
    pages, problems = listed(), []
    for module, imported in imports_of(task_module(name)):
        if module.startswith(".") or any(part.startswith("_") for part in module.split(".") if part != "__future__"):
            problems.append(f"{module}: a relative or private module")
        elif imported.startswith("_"):
            problems.append(f"{module}.{imported}: a private name")
        elif module.split(".")[0] == package() and imported not in pages.get(module, ()):
            problems.append(f"{module}.{imported}: not on docs/api.md")
    assert not problems, f"tasks/{name}.py is copied into projects as task.py; it imports {problems}"


@pytest.mark.parametrize("name", TASK_MODULES)
def test_a_task_module_subclasses_image_task_and_defines_its_loss_and_steps_itself(name: str) -> None:
    tree = task_module(name)
    (task,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [ast.unparse(b) for b in task.bases] == ["ImageTask"]
    methods = {n.name: n for n in task.body if isinstance(n, ast.FunctionDef)}
    assert not [s for s in STEPS if s not in methods], f"tasks/{name}.py lacks {[s for s in STEPS if s not in methods]}"
    for step in STEPS:
        for node in ast.walk(methods[step]):
            is_super = isinstance(node, ast.Attribute) and ast.unparse(node.value) == "super()"
            assert not (is_super and node.attr == step), f"tasks/{name}.py: {step} calls super().{step}()"


@pytest.mark.parametrize("name", TASK_MODULES)
def test_a_task_module_says_what_it_is_and_that_a_copy_is_its_owners(name: str) -> None:
    docstring = ast.get_docstring(task_module(name)) or ""
    assert f"--task {name}" in docstring and "``task.py``" in docstring and "to edit" in docstring, docstring


def test_the_version_is_one_number() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    version = importlib.import_module(package()).__version__
    assert pyproject == version, f"pyproject.toml says {pyproject}, {package()}.__version__ {version}"
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.M)[1] == version, "CHANGELOG.md's top release"
    try:
        installed = importlib.metadata.version(package())
    except importlib.metadata.PackageNotFoundError:
        return  # run from a checkout that is not installed
    assert installed == version, f"the installed {package()} is {installed}: reinstall (pip install -e .)"
