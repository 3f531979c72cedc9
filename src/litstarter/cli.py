"""LightningCLI wiring: subcommands, argument links and test-after-fit. No training logic lives here."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from lightning.fabric.utilities.rank_zero import rank_zero_only
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI

from litstarter._engine.run.check_checkpoints_written import CheckCheckpointsWritten
from litstarter._engine.run.checks import (
    check_accelerator_present,
    check_checkpoint_file,
    check_checkpoint_fits,
    drop_progress_bar_when_disabled,
    num_classes_of,
    turn_off_sync_batchnorm_on_cpu,
)
from litstarter._engine.run.claim import claim_run_directory, end_claim
from litstarter._engine.run.folder import (
    check_loggers,
    logger_entries,
    point_file_loggers_at,
    resume_in_the_checkpoints_run,
    share_one_run_directory,
)
from litstarter._engine.run.share_run_version import ShareRunVersion
from litstarter._engine.run.tracking import SaveConfigAndLogIt, log_run_files_to_mlflow, record_mlflow_runs
from litstarter.data.base import ArrayDataModule
from litstarter.task import ImageClassifier


class LitStarterCLI(LightningCLI):
    """``litstarter fit|validate|test|predict``: LightningCLI over :class:`ImageClassifier` and our data modules.

    Args:
        run_dir: Put the run in this folder, for every logger (``litstarter tune`` gives each trial its own);
            None: the loggers' ``<save_dir>/<name>/version_<n>``.
        *args: LightningCLI's arguments.
        **kwargs: LightningCLI's keyword arguments.
    """

    def __init__(self, *args, run_dir: str | Path | None = None, **kwargs) -> None:
        self.run_dir = Path(run_dir) if run_dir else None
        super().__init__(*args, **kwargs)

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        """Link what the data owns into the model, and add ``test_after_fit``."""
        # The data module knows its classes, channels and size; nobody should type them twice.
        # apply_on="instantiate": read from the data module object after it is built.
        # num_classes through a check: data with one class is the data's error, not model.num_classes'.
        parser.link_arguments("data", "model.num_classes", compute_fn=num_classes_of, apply_on="instantiate")
        for source, target in [
            ("channels", "in_channels"),
            ("image_size", "image_size"),
            ("class_names", "class_names"),
            ("resize_size", "resize_size"),  # the size images are stored at: inference on files resizes to it
        ]:
            parser.link_arguments(f"data.{source}", f"model.{target}", apply_on="instantiate")
        parser.add_argument(
            "--test_after_fit",
            type=bool,
            default=True,
            help="After `fit`, test the best checkpoint (ModelCheckpoint's `best_model_path`).",
        )

    def parse_arguments(self, parser: LightningArgumentParser, args) -> None:
        """Parse, then check ``--ckpt_path`` before LightningCLI reads hyper-parameters from it."""
        super().parse_arguments(parser, args)
        subcommand = self.config.get("subcommand")
        if subcommand:
            check_checkpoint_file(self.config[subcommand].get("ckpt_path"))

    def before_instantiate_classes(self) -> None:
        """Show litstarter's own log lines (e.g. a backbone's stem adapted to the channels) as Lightning's show;
        point a resumed fit's logger at the run directory its checkpoint came from."""
        show_litstarter_logs()
        config = self.config[self.subcommand] if self.subcommand else self.config
        check_accelerator_present(config)
        fall_back_to_fp16_without_bf16(config)
        turn_off_sync_batchnorm_on_cpu(config)
        drop_progress_bar_when_disabled(config)
        if self.subcommand == "fit" and resume_in_the_checkpoints_run(config):
            # Keep the run's original config.yaml (it has no ckpt_path); the resume's own goes beside it.
            self.save_config_kwargs["config_filename"] = "config.resume.yaml"
        check_loggers(config)  # before a folder is claimed
        if self.run_dir is not None:
            point_file_loggers_at(logger_entries(config), self.run_dir)
        if self.subcommand in ("fit", "validate", "test"):
            claim_run_directory(config)  # two runs with the same logger name never share a folder
        share_one_run_directory(config)  # several loggers, one folder: the first one's

    def instantiate_trainer(self, **kwargs):
        """The configured Trainer, plus the callbacks every run needs whatever the config lists: each rank uses
        rank 0's run folder; a fit stops when its checkpoints cannot be written."""
        trainer = super().instantiate_trainer(**kwargs)
        trainer.callbacks.extend([ShareRunVersion(), CheckCheckpointsWritten()])
        return trainer

    def check_resume_checkpoint(self) -> None:
        """Check ``--ckpt_path`` (a resume) before Lightning reads it."""
        check_checkpoint_fits(self.config_value("ckpt_path"), self.model)

    before_validate = before_test = before_predict = check_resume_checkpoint

    def before_fit(self) -> None:
        """Check ``--ckpt_path``; record the MLflow run id in the run folder, so that a resume continues it."""
        self.check_resume_checkpoint()
        record_mlflow_runs(self.trainer)

    def after_fit(self) -> None:
        """Test the best checkpoint on the test split, unless ``test_after_fit: false``; then hand the run's
        ``config.yaml`` and ``metrics.json`` to MLflow, if it is one of the loggers."""
        if self.config_value("test_after_fit") and not self.trainer.interrupted:
            self.test_best_checkpoint()
        log_run_files_to_mlflow(self.trainer)

    def test_best_checkpoint(self) -> None:
        """``trainer.test`` on the best checkpoint (the last weights if none was saved)."""
        if self.trainer.max_epochs == 0:
            logging.getLogger("litstarter").warning(
                "trainer.max_epochs=0: nothing was trained, so test-after-fit is skipped (it would score random"
                " weights); no metrics.json is written"
            )
            return
        ckpt = "best" if getattr(self.trainer.checkpoint_callback, "best_model_path", "") else None
        self.trainer.test(self.model, datamodule=self.datamodule, ckpt_path=ckpt)

    def config_value(self, key: str):
        """A top-level value of the active subcommand's config."""
        config = self.config[self.subcommand] if self.subcommand else self.config
        return config.get(key)


def fall_back_to_fp16_without_bf16(config) -> None:
    """``precision: bf16-mixed`` on a CUDA GPU without bf16 (before Ampere) becomes ``16-mixed``, with a log line.

    ``16-mixed`` needs loss scaling (Lightning adds a GradScaler) and can overflow where bf16 cannot; on a CPU,
    or a GPU that has bf16, nothing changes.
    """
    trainer = config.get("trainer") or {}
    if trainer.get("precision") not in ("bf16-mixed", "bf16"):
        return
    import torch

    if torch.cuda.is_available() and trainer.get("accelerator") in ("auto", "gpu", "cuda", None):
        if not torch.cuda.is_bf16_supported():
            logging.getLogger("litstarter").warning(
                "trainer.precision=bf16-mixed but %s has no bf16 support: using 16-mixed (fp16 with loss scaling)",
                torch.cuda.get_device_name(0),
            )
            trainer.precision = "16-mixed"


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is now, not the stream it was made with: a later in-process run (a tune
    trial, a notebook cell, a test) may have replaced stderr, and the first one may be closed by then."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def show_litstarter_logs(level: int = logging.INFO) -> None:
    """Print the ``litstarter`` loggers' records at ``level`` and above to stderr, from rank 0 only (once)."""
    logger = logging.getLogger("litstarter")
    if logger.handlers:
        return
    handler = _StderrHandler()
    handler.addFilter(lambda record: getattr(rank_zero_only, "rank", 0) == 0)
    logger.addHandler(handler)
    logger.setLevel(level)


def main(
    args: list[str] | None = None, callbacks: list | None = None, run_dir: str | Path | None = None
) -> LitStarterCLI:
    """Run the CLI. ``args=None`` reads ``sys.argv[1:]``.

    Args:
        args: Command-line arguments, without the program name.
        callbacks: Callback objects added to the configured ones (``litstarter tune`` adds its pruning callback).
        run_dir: The run's folder for every logger (``litstarter tune``'s trials); None: the loggers decide.
    """
    try:
        return LitStarterCLI(
            ImageClassifier,
            ArrayDataModule,
            run_dir=run_dir,
            subclass_mode_data=True,
            save_config_callback=SaveConfigAndLogIt,
            save_config_kwargs={"overwrite": True},
            trainer_defaults={"callbacks": callbacks} if callbacks else None,
            auto_configure_optimizers=False,  # the task owns its optimiser; see model.optimizer
            args=args,
        )
    finally:
        end_claim()  # a run that stopped before writing leaves no empty version folder
