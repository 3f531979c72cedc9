"""``RunCLI``: LightningCLI plus what every run of ours needs, whatever its config says.

In the order LightningCLI calls them:

1. after parsing: ``--resume`` becomes a checkpoint file in a run that agrees with the config and is held
   (:mod:`.resume`); ``--ckpt_path`` is read safely (``weights_only``) before Lightning reads hyper-parameters
   from it, each model setting of the user's it overrules is named (:mod:`.checkpoint_settings`), and the config
   can be written back as ``config.yaml`` (:mod:`.config_file`);
2. before anything is built: our log lines are shown, the accelerator exists, presets that cannot run here fall
   back (:mod:`.fallbacks`), a resume keeps writing into its checkpoint's run, the loggers are checked and the
   run folder is claimed (:mod:`.claim`), every logger writing into it (:mod:`.folder`), and a fit holds it;
3. the Trainer gets the callbacks every run needs (:mod:`.callbacks`), and the config goes back to the loggers as
   given, for ``config.yaml``;
4. before ``fit`` / ``validate`` / ``test`` / ``predict``: the checkpoint fits the model (:mod:`.checks`); the
   MLflow run is recorded and, after ``fit``, given the run's files (:mod:`.tracking`);
5. when the CLI returns, an empty claimed folder (a run that failed before writing) is removed.
"""

from __future__ import annotations

import copy
import logging
import sys
from pathlib import Path

import yaml
from jsonargparse import ArgumentError
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI

from litstarter.errors import UsageError

from ..trust import check_stored_classes, named_classes
from .callbacks import CheckCheckpointsWritten, SayWhatAMidEpochResumeReplays, ShareRunVersion, WarnOnTinyValidation
from .checkpoint_settings import say_what_the_checkpoint_overrules
from .checks import check_accelerator_present, check_checkpoint_file, check_checkpoint_fits, check_validation_runs
from .claim import claim_run_directory, end_claim, global_rank_from_env, hold_run
from .config_file import check_config_writes, keep_counts_as_ints, register_config_types
from .fallbacks import apply_fallbacks
from .folder import (
    MLFLOW,
    check_loggers,
    entry_run_dir,
    kind,
    logger_entries,
    point_file_loggers_at,
    resume_in_the_checkpoints_run,
    share_one_run_directory,
    write_into,
)
from .logs import show_litstarter_logs
from .parse_errors import sentence
from .resume import AUTO, resolve_resume
from .tracking import check_mlflow_loggers, continue_csv_logs, log_run_files_to_mlflow, record_mlflow_runs


class RunCLI(LightningCLI):
    """LightningCLI with the run handling above; the project's CLI subclasses it.

    Args:
        *args: LightningCLI's arguments.
        run_dir: Put the run in this folder, for every logger (a sweep gives each trial its own);
            None: the loggers' ``<save_dir>/<name>/version_<n>``.
        **kwargs: LightningCLI's keyword arguments.
    """

    def __init__(self, *args, run_dir: str | Path | None = None, **kwargs) -> None:
        self.run_dir = Path(run_dir) if run_dir else None
        register_config_types()
        failed = True
        try:
            super().__init__(*args, **kwargs)
            failed = False
        except ArgumentError as err:
            given = kwargs.get("args")
            given = sys.argv[1:] if given is None else list(given)
            raise UsageError(sentence(str(err), self._known_keys(given), given)) from None
        finally:  # a run that failed before its first step leaves no version folder behind
            stepped = getattr(getattr(self, "trainer", None), "global_step", 0) > 0
            end_claim(failed_before_training=failed and not stepped)

    def init_parser(self, **kwargs) -> LightningArgumentParser:
        """LightningCLI's parser (each subcommand's too), raising its refusals for a one-line sentence, and without
        argparse's abbreviations: ``--trainer.max_epoch 7`` is a typo, never ``max_epochs``."""
        kwargs.setdefault("exit_on_error", False)
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("prog", __name__.split(".")[0])  # "usage: litstarter [options] fit", not "__main__.py"
        return super().init_parser(**kwargs)

    def _known_keys(self, args: list[str]) -> list[str]:
        """The dotted options of the subcommand in ``args`` (for "did you mean"); LightningCLI keeps its
        subcommands' parsers in the private ``_subcommand_parsers``."""
        # tests/test_compat.py: "lightning LightningCLI._subcommand_parsers"
        # tests/test_compat.py: "argparse ArgumentParser._actions"
        parsers = getattr(self, "_subcommand_parsers", {})
        parser = parsers.get(args[0]) if args else None
        return [a.dest for a in getattr(parser, "_actions", []) if "." in a.dest or a.dest.isidentifier()]

    def add_core_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        """LightningCLI's trainer, model and data arguments, with the Trainer's counts read as ints."""
        super().add_core_arguments_to_parser(parser)
        keep_counts_as_ints(parser)
        parser.add_argument(
            "--trust_model",
            type=bool,
            default=False,
            help="Import classes that --ckpt_path names from outside litstarter, torch, torchvision and Lightning"
            " (importing runs their module's code): only for a checkpoint whose author you trust.",
        )
        parser.add_argument(
            "--resume",
            type=str | None,
            default=None,
            help=f"fit only. {AUTO}: continue the newest run of this experiment (trainer.logger's save_dir/name) that"
            " has a checkpoint (the newer of checkpoints/last.ckpt and hpc_ckpt_<n>.ckpt), in its own folder, curves"
            " and MLflow run; none: a fresh run. A run folder: continue that run. The config must agree with the"
            " run's on the model, the data and the optimiser; Trainer settings may change.",
        )

    def parse_arguments(self, parser: LightningArgumentParser, args) -> None:
        """Parse; then, before LightningCLI merges a checkpoint's settings into the config: resolve ``--resume`` to
        a checkpoint file, check ``--ckpt_path``, and name what its settings overrule."""
        show_litstarter_logs()  # the lines below come before the run's setup
        super().parse_arguments(parser, args)
        dumped = self.parser.dump(self.config, skip_unset=False, skip_validation=True)
        subcommand = self.config.get("subcommand")
        self.resume = None
        if subcommand:
            given = self.config[subcommand]
            self.resume = resolve_resume(subcommand, given, (yaml.safe_load(dumped) or {}).get(subcommand) or {})
            ckpt_path = given.get("ckpt_path")
            checkpoint = check_checkpoint_file(ckpt_path)
            if checkpoint is not None:  # LightningCLI merges its hyper-parameters next, importing each class named
                named = {class_path for _, class_path in named_classes(given)}
                where = f"--ckpt_path '{ckpt_path}' hyper_parameters"
                hparams = checkpoint.get("hyper_parameters") or {}
                check_stored_classes(hparams, named, given.get("trust_model"), where)
                if self.resume is None:  # a --resume was compared with its run's config.yaml already
                    model = self.given_model_settings(subcommand, args)
                    say_what_the_checkpoint_overrules(subcommand, model, hparams, str(ckpt_path))
                else:
                    self.resume.position = (checkpoint.get("epoch"), checkpoint.get("global_step"))
        check_config_writes(dumped)

    def given_model_settings(self, subcommand: str, args) -> dict | None:
        """The model settings the user gave (config files and options), without the parser's defaults: jsonargparse
        marks no value as given, so the subcommand's arguments are parsed again with ``defaults=False``."""
        given = sys.argv[1:] if args is None else args
        parser = getattr(self, "_subcommand_parsers", {}).get(subcommand)  # LightningCLI's, private
        if parser is None or not isinstance(given, list | tuple) or subcommand not in given:
            return None
        rest = list(given)[list(given).index(subcommand) + 1 :]
        try:
            model = parser.parse_args(rest, defaults=False).get("model")
        except (ArgumentError, SystemExit, TypeError, ValueError):
            return None
        return model.as_dict() if hasattr(model, "as_dict") else model

    def before_instantiate_classes(self) -> None:
        """Check and complete the parsed config, and claim the run's folder (step 2 above)."""
        show_litstarter_logs()
        config = self.active_config()
        self.given_loggers = copy.deepcopy((config.get("trainer") or {}).get("logger"))
        check_accelerator_present(config)
        apply_fallbacks(config)
        if self.resume is not None:
            write_into(config, self.resume.run_dir)
        if self.subcommand == "fit" and resume_in_the_checkpoints_run(config):
            # Keep the run's original config.yaml (it has no ckpt_path); the resume's own goes beside it.
            self.save_config_kwargs["config_filename"] = "config.resume.yaml"
        check_loggers(config)  # before a folder is claimed
        if self.run_dir is not None:
            point_file_loggers_at(logger_entries(config), self.run_dir)
        if self.subcommand in ("fit", "validate", "test"):
            claim_run_directory(config)  # two runs with the same logger name never share a folder
        share_one_run_directory(config)  # several loggers, one folder: the first one's
        if self.subcommand == "fit":
            self.hold_the_run(config)

    def hold_the_run(self, config) -> None:
        """Hold the fit's run folder (global rank 0; see :func:`.claim.hold_run`) and say what a resume continues."""
        entries = logger_entries(config)
        run_dir = entry_run_dir(entries[0]) if entries else None
        if run_dir is not None and global_rank_from_env() in (None, 0):
            hold_run(run_dir)
        if self.resume is not None:
            mlflow = [e.init_args.get("run_id") for e in entries if kind(e) == MLFLOW]
            logging.getLogger("litstarter").warning(self.resume.line(mlflow[0] if mlflow else None))

    def instantiate_classes(self) -> None:
        """Build everything, then put the loggers back as given: ``config.yaml`` records settings, not the folder
        this run claimed (a rerun from it gets its own)."""
        super().instantiate_classes()
        config = self.active_config()
        if config.get("trainer") is not None and hasattr(self, "given_loggers"):
            config.trainer.logger = self.given_loggers

    def instantiate_trainer(self, **kwargs):
        """The configured Trainer, plus the callbacks every run needs: each rank uses rank 0's run folder; a fit
        stops when its checkpoints cannot be written."""
        trainer = super().instantiate_trainer(**kwargs)
        trainer.callbacks.extend(
            [ShareRunVersion(), CheckCheckpointsWritten(), WarnOnTinyValidation(), SayWhatAMidEpochResumeReplays()]
        )
        continue_csv_logs(trainer)  # a CSV log shares the run folder and continues on a resume, never deleted
        return trainer

    def check_resume_checkpoint(self) -> None:
        """Check ``--ckpt_path`` against the model before Lightning loads it."""
        check_checkpoint_fits(self.active_config().get("ckpt_path"), self.model)

    def before_evaluating(self) -> None:
        """Check ``--ckpt_path``, and that an MLflow server answers (before Lightning waits on it in silence)."""
        self.check_resume_checkpoint()
        check_mlflow_loggers(self.trainer)

    before_validate = before_test = before_predict = before_evaluating

    def before_fit(self) -> None:
        """Check ``--ckpt_path`` and that validation runs if it is monitored; record the MLflow run id in the run
        folder, so that a resume continues it."""
        self.check_resume_checkpoint()
        check_validation_runs(self.trainer)
        record_mlflow_runs(self.trainer)

    def after_fit(self) -> None:
        """Hand the run's ``config.yaml`` and ``metrics.json`` to MLflow, if it is one of the loggers."""
        log_run_files_to_mlflow(self.trainer)

    def active_config(self):
        """The active subcommand's config (the whole config without subcommands)."""
        return self.config[self.subcommand] if self.subcommand else self.config
