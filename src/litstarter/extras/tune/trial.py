"""One trial = one ordinary ``litstarter fit``, in its own run directory, reporting each validation to Optuna.

The fit runs in the tune process (no second ``import lightning`` per trial), through the same
``litstarter.cli.main`` as ``litstarter fit``, with two additions: the run directory is
``<study folder>/trial_<n>/`` for every logger, and optuna-integration's ``PyTorchLightningPruningCallback``
(extended to remember the best value) reports every validation and raises ``TrialPruned`` when the pruner
says so. Its ``config.yaml`` therefore reproduces the trial: ``litstarter fit --config <trial>/config.yaml``.
"""

from __future__ import annotations

import math
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import optuna
import yaml
from optuna_integration import PyTorchLightningPruningCallback

from litstarter._engine.errors import want_traceback
from litstarter.errors import UsageError
from litstarter.extras.tune.search_space import SearchSpace
from litstarter.extras.tune.storage import WORKER_ATTR, this_worker

ERROR_ATTR = "error"  # user attribute of a FAIL trial: its error in one line (the traceback is in <run>/error.txt)
RUN_DIR_ATTR = "run_dir"


class TrialFailed(Exception):
    """A trial raised (its message is the original error in one line); the study records FAIL and goes on."""


class ReportToTrial(PyTorchLightningPruningCallback):
    """Report ``monitor`` to the trial after every validation (pruning as optuna-integration does), and keep
    the best value seen, which becomes the trial's value: the same value ModelCheckpoint keeps the weights of.

    Args:
        trial: The Optuna trial.
        monitor: The metric, e.g. ``val/acc``.
        direction: ``maximize`` or ``minimize``.
    """

    def __init__(self, trial: optuna.Trial, monitor: str, direction: str) -> None:
        super().__init__(trial, monitor)
        self.direction = direction
        self.best: float | None = None
        self.logged: list[str] = []

    def on_validation_end(self, trainer, pl_module) -> None:
        """Remember the value, then let optuna-integration report it and maybe prune (not after the last
        epoch: pruning then would save no time and only throw away a finished trial and its test)."""
        if trainer.sanity_checking:
            return
        self.logged = sorted(trainer.callback_metrics)
        value = trainer.callback_metrics.get(self.monitor)
        if value is not None and math.isfinite(float(value)):
            better = max if self.direction == "maximize" else min
            self.best = float(value) if self.best is None else better(self.best, float(value))
        last_epoch = (trainer.max_epochs or 0) > 0 and pl_module.current_epoch >= trainer.max_epochs - 1
        if last_epoch and value is not None:
            self._trial.report(float(value), step=pl_module.current_epoch)
            return
        super().on_validation_end(trainer, pl_module)


def dotted_arg(key: str, value) -> str:
    """``--key=value`` with the value as YAML, as the command line takes it."""
    text = yaml.safe_dump(value, default_flow_style=True).strip()
    return f"--{key}={text.removesuffix('...').strip()}"


@dataclass
class TrialRunner:
    """The objective: run one trial as a fit and return its best ``metric``.

    Args:
        configs: The ``--config`` stack, as given to ``tune``.
        overrides: ``tune``'s other arguments (e.g. ``--trainer.max_epochs=2``), passed on to every fit.
        space: The search space.
        study_dir: The study's folder; trial ``n`` runs in ``<study_dir>/trial_<n>/``.
    """

    configs: list[str]
    overrides: list[str]
    space: SearchSpace
    study_dir: Path
    log: list[str] = field(default_factory=list)

    def fit_args(self, values: dict, chosen_configs: list[str]) -> list[str]:
        """``fit`` arguments: the config stack, the chosen config files, tune's overrides, the drawn values."""
        args = ["fit"]
        for config in [*self.configs, *chosen_configs]:
            args += ["--config", config]
        return [*args, *self.overrides, *(dotted_arg(k, v) for k, v in values.items())]

    def __call__(self, trial: optuna.Trial) -> float:
        from litstarter.cli import main as cli_main

        trial.study.sampler = self.space.make_sampler(trial.number)  # seeded per trial; see make_sampler
        run_dir = self.study_dir / f"trial_{trial.number}"
        trial.set_user_attr(WORKER_ATTR, this_worker())
        trial.set_user_attr(RUN_DIR_ATTR, str(run_dir))
        values, chosen = self.space.suggest(trial)
        drawn = ", ".join(f"{k}={v}" for k, v in trial.params.items())
        print(f"litstarter tune: trial {trial.number} in {run_dir}: {drawn}", file=sys.stderr, flush=True)
        report = ReportToTrial(trial, self.space.metric, self.space.direction)
        try:
            cli_main(self.fit_args(values, chosen), callbacks=[report], run_dir=run_dir)
        except optuna.TrialPruned:
            raise
        except SystemExit as err:  # the config parser rejected a drawn value; it printed why
            self._fail(trial, run_dir, f"the fit's arguments were rejected (exit {err.code}); see the output above")
        except Exception as err:  # a bug, a bad drawn value (a UserError), a non-finite loss: FAIL, go on
            self._fail(trial, run_dir, f"{type(err).__name__}: {_first_line(err)}")
        if report.best is None:
            raise UsageError(
                f"{self.space.path}: objective.metric {self.space.metric!r} was never logged by trial "
                f"{trial.number}; its validation logged {', '.join(report.logged) or 'nothing'}"
            )
        return report.best

    @staticmethod
    def _fail(trial: optuna.Trial, run_dir: Path, message: str) -> None:
        """Record the error (one line in the study, the traceback in ``<run>/error.txt``) and raise TrialFailed."""
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "error.txt").write_text(traceback.format_exc())
        if want_traceback():
            traceback.print_exc()
        trial.set_user_attr(ERROR_ATTR, message)
        raise TrialFailed(f"{message} (traceback in {run_dir / 'error.txt'})") from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else repr(err)
