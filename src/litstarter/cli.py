"""``litstarter fit|validate|test|predict``: LightningCLI over the task and any data module. No training logic here.

The run handling every subcommand gets (safe checkpoint reading, run folders, the checks before a run) is the
engine's :class:`~litstarter._engine.run.cli.RunCLI`; this file adds what is ours: the facts linked from the data
into the model, and testing the best checkpoint after ``fit``, beside a linear baseline.
"""

from __future__ import annotations

import functools
import importlib
import logging
import pkgutil
from pathlib import Path

import lightning as L
from lightning.pytorch.cli import LightningArgumentParser

from litstarter._engine.deprecation import Deprecated, deprecated_names
from litstarter._engine.run.checks import data_fact, num_classes_of
from litstarter._engine.run.cli import RunCLI
from litstarter._engine.run.tracking import SaveConfigAndLogIt
from litstarter.callbacks.write_test_metrics import WriteTestMetrics
from litstarter.errors import UserError
from litstarter.models.timm_data_config import resize_of
from litstarter.tasks.base import ImageTask

__all__ = ["LitStarterCLI", "main"]

log = logging.getLogger("litstarter")


def _import_tasks() -> None:
    """Import every task module of the package (``tasks/<name>.py``; not the answers): each is then known by its
    short name (``--model ImageRegressor``) and by the config that selects it. A new task is a new file."""
    package = importlib.import_module("litstarter.tasks")
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.endswith("answers"):
            importlib.import_module(f"{package.__name__}.{info.name}")


_import_tasks()


def resize_size_of(datamodule) -> tuple[int, int] | None:
    """The size the data module stores images at, before the eval view centre-crops ``image_size`` (``None``: the
    data module does not say, so it stores them at ``image_size``)."""
    return getattr(datamodule, "resize_size", None)


def interpolation_of(datamodule) -> str:
    """The filter the data module resizes files with (``bilinear`` unless it says otherwise)."""
    return getattr(datamodule, "interpolation", None) or "bilinear"


def tiles_of(datamodule) -> dict | None:
    """The windows the data module trains on (``data.tiles``) as plain values, ``None`` where it has none."""
    tiling = getattr(datamodule, "tiling", None)
    return tiling.to_dict() if tiling is not None else None


def fill_in_backbone_resize(config) -> None:
    """A ``timm/`` backbone's resize filter and crop fraction (its pretrained config's) into ``data.interpolation``
    and ``data.crop_pct`` where the data module takes them and they are unset, so that the cache, ``model.json``,
    ``infer`` and ``serve`` resize as the backbone expects; one line says so."""
    model, data = config.get("model") or {}, config.get("data")
    if hasattr(model, "get") and "class_path" in model:  # the task, by class path: its arguments
        model = model.get("init_args") or {}
    resize = resize_of(model.get("backbone"))
    args = data.get("init_args") if data is not None and hasattr(data, "get") else None
    if resize is None or args is None:
        return
    filled = {k: v for k, v in resize.items() if k in args and args.get(k) is None}
    for key, value in filled.items():
        args[key] = value
    if filled:
        given = ", ".join(f"data.{k}={v}" for k, v in filled.items())
        log.info("data: %s from %s's pretrained config (the resize it expects)", given, model.get("backbone"))


#: What every command that reads a fit's config builds it from (``fit`` and the extras' parse-only CLIs alike): the
#: task by class path (configs/default.yaml names one, configs/task/ the others), any data module that provides the
#: facts linked below (see litstarter.data.base), and the task's own optimiser (see model.optimizer).
FIT_CLASSES = {
    "model_class": ImageTask,
    "datamodule_class": L.LightningDataModule,
    "subclass_mode_model": True,
    "subclass_mode_data": True,
    "auto_configure_optimizers": False,
}


class LitStarterCLI(RunCLI):
    """The CLI: links ``data`` -> ``model`` and adds ``--test_after_fit``."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        """Link what the data owns into the model, and add ``test_after_fit``."""
        # The data module knows its classes, channels and size; nobody should type them twice. apply_on="instantiate":
        # read from the data module object once it is built. Each through a function that names a missing fact.
        links = {
            "num_classes": self.num_classes_for_task,  # the task's targets and one class: the data's error
            "in_channels": functools.partial(data_fact, name="channels"),
            "image_size": functools.partial(data_fact, name="image_size"),
            "class_names": functools.partial(data_fact, name="class_names"),
            "resize_size": resize_size_of,  # inference on files resizes to it
            "interpolation": interpolation_of,  # with this filter
            "tiles": tiles_of,  # windows over larger images: val, test, predict and inference slide them
        }
        for target, compute in links.items():
            parser.link_arguments("data", f"model.init_args.{target}", compute_fn=compute, apply_on="instantiate")
        parser.add_argument(
            "--baseline",
            type=bool,
            default=True,
            help="After the test after fit, score the task's baselines on the same splits beside the network's"
            " scores (classification: logistic regression on the raw pixels, test/baseline_acc; regression: the train"
            " mean and ridge regression, test/baseline_*_mae), with a line when the network is not clearly better.",
        )
        parser.add_argument(
            "--test_after_fit",
            type=bool,
            default=True,
            help="After `fit`, test the best checkpoint (ModelCheckpoint's `best_model_path`).",
        )

    def before_instantiate_classes(self) -> None:
        """The engine's checks, then a timm backbone's resize into the data's config."""
        super().before_instantiate_classes()
        fill_in_backbone_resize(self.active_config())

    def instantiate_classes(self) -> None:
        """Build everything, the data knowing what the task trains on (a folder without boxes, for a task of boxes,
        is refused naming the box formats: :func:`~litstarter._engine.images.label_formats.expecting`); a refusal
        from a link's function (:meth:`num_classes_for_task`) is raised as it is, not inside jsonargparse's ``Call
        to compute_fn of link ...`` wrapper."""
        from litstarter._engine.images.label_formats import expecting

        try:
            task = self.task_class()
        except (ImportError, AttributeError):  # named by the link's function below, as before
            task = None
        try:
            with expecting(getattr(task, "target_kind", None), getattr(task, "__name__", "the task")):
                super().instantiate_classes()
        except ValueError as err:
            if isinstance(err.__cause__, UserError):
                raise err.__cause__ from None
            raise

    def task_class(self) -> type | None:
        """The configured task's class (an :class:`ImageTask`), or ``None`` when it is not one."""
        model = self.active_config().get("model")
        path = str(getattr(model, "class_path", None) or "")  # parsed: the full dotted path
        module, _, name = path.rpartition(".")
        task = getattr(importlib.import_module(module), name, None) if module else None
        return task if isinstance(task, type) and issubclass(task, ImageTask) else None

    def num_classes_for_task(self, datamodule) -> int:
        """``data.num_classes`` for ``model.num_classes``, once the configured task has checked that the data's
        targets are its own (before the task is built: a task of two classes would refuse one value column as
        ``model.num_classes``, never naming the data)."""
        task = self.task_class()
        if task is not None:
            task.check_targets(datamodule)
        return num_classes_of(datamodule)

    def after_fit(self) -> None:
        """Test the best checkpoint on the test split, unless ``test_after_fit: false``; then the engine's after-fit
        (MLflow gets the run's files)."""
        if self.active_config().get("test_after_fit") and not self.trainer.interrupted:
            self.test_best_checkpoint()
            if self.active_config().get("baseline") and getattr(self.model, "baseline", None) is not None:
                self.compare_with_baseline()
        super().after_fit()

    def compare_with_baseline(self) -> None:
        """The task's baselines beside the network's in ``metrics.json`` and the loggers (``litstarter.baseline``)."""
        writer = next((c for c in self.trainer.callbacks if isinstance(c, WriteTestMetrics)), None)
        run_dir = self.trainer.log_dir  # a collective under DDP (rank 0 broadcasts it): every rank must ask
        if writer is not None and run_dir and self.trainer.is_global_zero:
            metrics = Path(run_dir) / writer.filename
            seed, epochs = getattr(self.datamodule, "seed", 0), self.trainer.current_epoch
            self.model.baseline(self.datamodule, metrics, seed=seed, epochs=epochs, trainer=self.trainer)

    def test_best_checkpoint(self) -> None:
        """``trainer.test`` on the best checkpoint (the last weights if none was saved)."""
        if self.trainer.max_epochs == 0:
            log.warning(
                "trainer.max_epochs=0: nothing was trained, so test-after-fit is skipped (it would score random"
                " weights); no metrics.json is written"
            )
            return
        ckpt = "best" if getattr(self.trainer.checkpoint_callback, "best_model_path", "") else None
        self.trainer.test(self.model, datamodule=self.datamodule, ckpt_path=ckpt)


def main(
    args: list[str] | None = None, callbacks: list | None = None, run_dir: str | Path | None = None
) -> LitStarterCLI:
    """Run the CLI. ``args=None`` reads ``sys.argv[1:]``.

    Args:
        args: Command-line arguments, without the program name.
        callbacks: Callback objects added to the configured ones (a sweep adds its pruning callback).
        run_dir: The run's folder for every logger (a sweep's trials); None: the loggers decide.
    """
    return LitStarterCLI(
        **FIT_CLASSES,
        run_dir=run_dir,
        save_config_callback=SaveConfigAndLogIt,
        save_config_kwargs={"overwrite": True},
        trainer_defaults={"callbacks": callbacks} if callbacks else None,
        args=args,
    )


#: A name 0.1.0 exposed, private since 0.2.0.
__getattr__ = deprecated_names(
    __name__,
    {
        "import_tasks": Deprecated(
            "_import_tasks", removed_in="0.3.0", instead="importing litstarter.cli imports every task module"
        ),
    },
)
