"""The ``data`` section of a ``fit`` command line, parsed by the CLI's own parser (nothing is built but the folder).

``inspect`` takes ``fit``'s ``--config`` stack and its options, so it sees the folder, ``image_size`` and cache that
``fit`` would; a typo or a wrong type is refused exactly as ``fit`` refuses it, in one line.
"""

from __future__ import annotations

import inspect
import logging
import warnings
from pathlib import Path

import yaml
from jsonargparse import Namespace

from litstarter._engine.images.folder import CachedImageFolder
from litstarter.cli import FIT_CLASSES, LitStarterCLI
from litstarter.data import ImageFolderDataModule
from litstarter.errors import UsageError
from litstarter.tasks import ImageTask
from litstarter.tasks.base import all_subclasses

#: The config whose task ``inspect`` reads when the command line names none (a project's, in its own folder).
DEFAULT_CONFIG = Path("configs") / "default.yaml"


def default_task(config: Path = DEFAULT_CONFIG) -> str:
    """The class path of the task ``config`` names (``model.class_path``: a project's own task, in its folder); where
    the file is missing or names none, the task that says it is that config's (:attr:`ImageTask.task_config`).

    Raises:
        UsageError: ``config`` is not YAML.
    """
    if config.is_file():
        try:
            model = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("model")
        except (yaml.YAMLError, AttributeError) as err:
            raise UsageError(f"{config} is not a YAML mapping: {err}") from None
        if isinstance(model, dict) and model.get("class_path"):
            return str(model["class_path"])
    task = next(t for t in all_subclasses(ImageTask) if t.task_config == config.as_posix())
    return f"{task.__module__}.{task.__qualname__}"


def defaults() -> dict[str, str]:
    """What ``inspect --data.root <folder>`` reads without a ``--config``: an image folder, under the default task."""
    data = f"{ImageFolderDataModule.__module__}.{ImageFolderDataModule.__qualname__}"
    return {"--model": default_task(), "--data": data}


class ParseOnly(LitStarterCLI):
    """The CLI up to its parsed config: no run folder is claimed and nothing is instantiated."""

    def before_instantiate_classes(self) -> None:
        """Nothing: a report claims no run folder."""

    def instantiate_classes(self) -> None:
        """Nothing: only the config is wanted."""


def with_defaults(args: list[str]) -> list[str]:
    """``args`` with :func:`defaults` in front where no ``--config`` is given and the key is not (so that
    ``inspect --data.root <folder>`` reads the folder with ``ImageFolderDataModule``'s defaults, as ``fit`` would
    with ``configs/data/image_folder.yaml``, under the task that ``configs/default.yaml`` names)."""
    keys = {arg.split("=", 1)[0] for arg in args}
    if keys & {"--config", "-c"}:
        return args
    return [*(part for key, value in defaults().items() if key not in keys for part in (key, value)), *args]


def parse_fit_config(args: list[str]) -> Namespace:
    """The config ``litstarter fit <args>`` would run with, checked as ``fit`` checks it.

    Raises:
        UsageError: What the parser refused, in one sentence (the CLI's own).
    """
    seed_log = logging.getLogger("lightning.fabric.utilities.seed")
    level, seed_log.level = seed_log.level, logging.WARNING  # LightningCLI seeds after parsing; no line for it here
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="LightningCLI's args parameter")  # we pass args on purpose
            cli = ParseOnly(**FIT_CLASSES, run=False, args=with_defaults(args))
    finally:
        seed_log.level = level
    return cli.config


def image_folder_of(config: Namespace) -> CachedImageFolder:
    """The folder an image-folder data config describes.

    Raises:
        UsageError: The data module is not an image folder, or a value the folder refuses.
    """
    data = config.get("data")
    class_path = str(getattr(data, "class_path", ""))
    if not class_path.endswith("ImageFolderDataModule"):
        raise UsageError(
            f"litstarter inspect reads image folders, but data.class_path is {class_path or None!r}; add --config"
            " configs/data/image_folder.yaml (data.class_path: litstarter.data.ImageFolderDataModule)"
        )
    init_args = vars(data.init_args)
    accepted = set(inspect.signature(CachedImageFolder).parameters)
    defaults = inspect.signature(ImageFolderDataModule).parameters
    keys = ("ignore_index", "mask_resize", "on_bad_box", "box_format")
    settings = {key: init_args.get(key, defaults[key].default) for key in keys}
    settings["binary"] = init_args.get("binary_masks", defaults["binary_masks"].default)  # masks: as fit reads them
    settings["on_bad_box"] = "skip"  # bad boxes are listed and counted, not fatal: reporting them is the point
    kept = {k: v for k, v in init_args.items() if k in accepted}
    return CachedImageFolder(**kept, target_settings=settings)


def loader_setting(config: Namespace, key: str):
    """A data setting ``inspect`` reads but does not build (``sampler``)."""
    return config.data.init_args.get(key, inspect.signature(ImageFolderDataModule).parameters[key].default)
