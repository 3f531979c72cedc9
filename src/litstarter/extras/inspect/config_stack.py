"""The ``data`` section of a ``fit`` command line, read without Lightning (for ``litstarter inspect``).

``fit`` composes ``--config`` files in order, then applies ``--data.*`` options; this does the same for the
image-folder data module's settings, so ``inspect`` sees the folder, ``image_size`` and cache that ``fit``
would. Values are checked against :class:`~litstarter._engine.images.folder.CachedImageFolder`'s signature by
jsonargparse (the parser LightningCLI uses), so a typo or a wrong type is refused as ``fit`` refuses it.
Options of the other sections (``--trainer.*``, ``--model.*``, ...) are accepted and ignored.
"""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from litstarter._engine.errors import UsageError
from litstarter._engine.images.folder import CachedImageFolder

IMAGE_FOLDER_CLASS = "litstarter.data.ImageFolderDataModule"
_CLASS_NAMES = {IMAGE_FOLDER_CLASS, "litstarter.data.image_folder.ImageFolderDataModule", "ImageFolderDataModule"}
#: ImageFolderDataModule arguments that only shape the loaders: ``inspect`` reads them and leaves them be.
LOADER_ARGUMENTS = frozenset({"sampler", "augmentation", "batch_size", "num_workers", "mean", "std"})
#: Top-level keys of a ``fit`` config besides ``data``; their options take a value and are ignored here.
OTHER_SECTIONS = frozenset(
    {"trainer", "model", "seed_everything", "ckpt_path", "optimizer", "lr_scheduler", "test_after_fit"}
)


@dataclass
class DataConfig:
    """What ``inspect`` needs from a ``fit`` command line.

    Args:
        init_args: The data module's arguments after every ``--config`` and ``--data.*`` (raw values).
        class_path: The data module's class as given last (``ImageFolderDataModule`` if none is).
        class_weights: ``model.class_weights`` if the stack sets it (for the suggestions).
        flags: Options of our own (``--json``), in the order given.
    """

    class_path: str = IMAGE_FOLDER_CLASS
    init_args: dict = field(default_factory=dict)
    class_weights: object = None
    flags: list[str] = field(default_factory=list)


def _load_yaml(path: str) -> dict:
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"--config '{path}' does not exist")
    try:
        loaded = yaml.safe_load(file.read_text())
    except yaml.YAMLError as error:
        raise UsageError(f"--config '{path}' is not valid YAML: {error}") from None
    if loaded is not None and not isinstance(loaded, dict):
        raise UsageError(f"--config '{path}' must hold a mapping of sections (data:, trainer:, ...)")
    return loaded or {}


def _apply_data(config: DataConfig, data) -> None:
    """Merge one file's ``data:`` section (``class_path``/``init_args``, or bare arguments)."""
    if not isinstance(data, dict):
        raise UsageError(f"the config's data section must be a mapping, got {data!r}")
    if "class_path" not in data and "init_args" not in data:
        data = {"init_args": data}
    if "class_path" in data:
        _set_class(config, str(data["class_path"]))
    config.init_args.update(data.get("init_args") or {})


def _set_class(config: DataConfig, class_path: str) -> None:
    """Like jsonargparse: arguments set for another class carry over only if the new class takes them."""
    if class_path != config.class_path and class_path in _CLASS_NAMES:
        accepted = set(inspect.signature(CachedImageFolder).parameters) | LOADER_ARGUMENTS
        config.init_args = {k: v for k, v in config.init_args.items() if k in accepted}
    config.class_path = class_path


def _split_option(argv: list[str], i: int) -> tuple[str, str | None, int]:
    """``(key, value, next index)`` for the option at ``argv[i]`` (``--key value`` or ``--key=value``)."""
    key = argv[i][2:]
    if "=" in key:
        key, value = key.split("=", 1)
        return key, value, i + 1
    if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
        return key, argv[i + 1], i + 2
    return key, None, i + 1


def read_command_line(argv: list[str], own_flags: frozenset[str]) -> DataConfig:
    """Read ``--config`` files and ``--data.*`` / ``--model.class_weights`` options in order, like ``fit``.

    Raises:
        UsageError: a missing or malformed config file, an option ``fit`` does not have, a data module
            other than ``ImageFolderDataModule``.
    """
    config, i = DataConfig(), 0
    while i < len(argv):
        if not argv[i].startswith("--"):
            raise UsageError(f"unexpected argument {argv[i]!r}; options start with --")
        if argv[i][2:] in own_flags:
            config.flags.append(argv[i][2:])
            i += 1
            continue
        key, value, i = _split_option(argv, i)
        if key == "config":
            if value is None:
                raise UsageError("--config needs a file")
            sections = _load_yaml(value)
            if "data" in sections:
                _apply_data(config, sections["data"])
            config.class_weights = (sections.get("model") or {}).get("class_weights", config.class_weights)
        elif key in ("data", "data.class_path"):
            _set_class(config, value or "")
        elif key.startswith("data."):
            name = key.removeprefix("data.").removeprefix("init_args.")
            config.init_args[name] = yaml.safe_load(value) if value is not None else None
        elif key == "model.class_weights" or key == "model.init_args.class_weights":
            config.class_weights = yaml.safe_load(value) if value is not None else None
        elif key.split(".")[0] not in OTHER_SECTIONS:
            raise UsageError(f"unknown option --{key}; inspect takes fit's --config and --data.* options")
    if config.class_path not in _CLASS_NAMES:
        raise UsageError(
            f"litstarter inspect reads image folders, but data.class_path is {config.class_path!r}; add"
            f" --config configs/data/image_folder.yaml (data.class_path: {IMAGE_FOLDER_CLASS})"
        )
    return config


def build_folder(init_args: dict) -> CachedImageFolder:
    """The :class:`CachedImageFolder` for a data module's arguments, type-checked as ``fit`` checks them.

    Raises:
        UsageError: ``data.root`` missing, an unknown key, or a value of the wrong type.
    """
    from jsonargparse import ArgumentParser  # only here: reading the YAML files does not need it

    accepted = set(inspect.signature(CachedImageFolder).parameters) | LOADER_ARGUMENTS
    unknown = sorted(set(init_args) - accepted)
    if unknown:
        raise UsageError(f"data.{unknown[0]} is not an option of ImageFolderDataModule; it takes {sorted(accepted)}")
    args = {k: v for k, v in init_args.items() if k not in LOADER_ARGUMENTS}
    if args.get("root") is None:
        raise UsageError("data.root is not set: pass --data.root <folder>")
    parser = ArgumentParser(exit_on_error=False)
    parser.add_class_arguments(CachedImageFolder, fail_untyped=False)
    try:
        namespace = parser.parse_string(json.dumps(args, default=str))
    except Exception as error:  # noqa: BLE001 - jsonargparse's ArgumentError; we name the key ourselves
        raise UsageError(_sentence(str(error), args)) from None
    try:
        return CachedImageFolder(**parser.instantiate_classes(namespace).as_dict())
    except (FileNotFoundError, ValueError) as error:  # the folder's own checks (layout, classes): user errors
        raise UsageError(str(error)) from None


def _sentence(message: str, args: dict) -> str:
    """``data.<key> must be <type>, got <value>`` from a jsonargparse error (its first line names the key)."""
    match = re.match(r'Parser key "(\w+)"', message)
    if match is None:
        return f"data: {' '.join(message.split())}"
    key = match[1]
    annotation = inspect.signature(CachedImageFolder).parameters[key].annotation
    return f"data.{key} must be {annotation}, got {args.get(key)!r}"
