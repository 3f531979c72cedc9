"""Where a project's own classes come from: the ``class_path`` values its configs name, and the packages under its
``src/`` folder (what a project's Makefile puts on ``PYTHONPATH``). The library's modules are walked by the caller."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path

import yaml

from litstarter.errors import UsageError

from .discovery import classes_in


def read_configs(paths: list[Path]) -> dict[Path, object]:
    """Each config file, parsed as YAML; one that is missing or does not parse is refused in one line."""
    parsed = {}
    for path in paths:
        try:
            parsed[path] = yaml.safe_load(path.read_text())
        except OSError as err:
            raise UsageError(f"--config: cannot read '{path}' ({err.strerror or err})") from None
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise UsageError(f"'{path}' does not parse as YAML{where}: {problem}") from None
    return parsed


def class_paths(config: object) -> Iterator[str]:
    """Every dotted ``class_path`` value in ``config``, at any depth (a bare name is resolved among the walked
    modules' classes, as jsonargparse does)."""
    if isinstance(config, dict):
        for key, value in config.items():
            if key == "class_path" and isinstance(value, str) and "." in value:
                yield value
            else:
                yield from class_paths(value)
    elif isinstance(config, list):
        for item in config:
            yield from class_paths(item)


def resolve(path: str) -> type:
    """The class a dotted path names: its longest importable module, then attributes (a nested class).

    Raises:
        LookupError: The path names no class; its message says why.
    """
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            found = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name and (module_name == err.name or module_name.startswith(f"{err.name}.")):
                continue  # this prefix is no module: try a shorter one
            raise LookupError(f"its module needs {err.name}, which is not installed") from None
        for attribute in parts[cut:]:
            found = getattr(found, attribute, None)
        if not inspect.isclass(found):
            raise LookupError(f"{module_name} has no class {'.'.join(parts[cut:])}")
        return found
    raise LookupError(f"no module {parts[0]} imports")


def named_classes(configs: dict[Path, object]) -> list[type]:
    """The classes the configs name by dotted ``class_path``, in the order met. One that does not resolve is left
    out, with a line on stderr: the schema then refuses it, as the CLI would."""
    found: list[type] = []
    for path, config in configs.items():
        for name in dict.fromkeys(class_paths(config)):
            try:
                cls = resolve(name)
            except LookupError as err:
                print(f"{path} names {name}, left out of the schema: {err}", file=sys.stderr)
                continue
            if cls not in found:
                found.append(cls)
    return found


def source_packages(src: Path, skip: set[str]) -> list[str]:
    """The importable packages directly under ``src`` (a folder holding ``__init__.py``), by name, less ``skip``."""
    if not src.is_dir():
        return []
    return sorted(
        p.name for p in src.iterdir() if (p / "__init__.py").is_file() and p.name.isidentifier() and p.name not in skip
    )


def own_classes(packages: list[str]) -> list[type]:
    """The classes of ``packages``, each walked (a module added later is found)."""
    return list(dict.fromkeys(cls for name in packages for cls in classes_in(name, walk=True)))


@contextlib.contextmanager
def importable(src: Path) -> Iterator[None]:
    """``src`` first on ``sys.path`` meanwhile, where it is a folder: a project imports from it (its Makefile
    exports ``PYTHONPATH=src``). What imported stays imported; the path is as it was after."""
    if not src.is_dir():
        yield
        return
    added = str(src.resolve())
    sys.path.insert(0, added)
    try:
        yield
    finally:
        sys.path.remove(added)
