"""``litstarter tune``: a hyperparameter search over ``litstarter fit`` runs, with Optuna.

    litstarter tune --config configs/default.yaml --search configs/search/default.yaml --trials 20 \\
        [--storage URL] [--study_name NAME] [--trainer.max_epochs=10 ...]

Everything that is not a tune option is handed to every trial's fit, like ``--trainer.max_epochs=10``.
Everything is checked before the first trial: the config stack, every searched key and value, the storage.
Then trials run until the study holds ``--trials`` trials (COMPLETE, PRUNED and FAIL all count; running ones
too, so that workers started together stop at N). Running the same command again continues the study.
"""

from __future__ import annotations

import argparse
import io
import logging
import re
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import optuna
import yaml
from jsonargparse import Namespace

from litstarter._engine.arguments import ArgumentParser
from litstarter._engine.errors import want_traceback
from litstarter._engine.run.folder import MLFLOW, check_loggers
from litstarter._engine.run.tracking import check_mlflow_settings
from litstarter.errors import UsageError
from litstarter.extras.tune.objective import check_objective
from litstarter.extras.tune.report import (
    summary_table,
    write_best_yaml,
    write_plots,
    write_search_yaml,
    write_trials_csv,
)
from litstarter.extras.tune.search_space import SearchSpace, load_search_space
from litstarter.extras.tune.storage import fail_trials_of_dead_workers, open_storage
from litstarter.extras.tune.trial import TrialFailed, TrialRunner

REFUSED = ("--ckpt_path", "--print_config")  # every trial starts from scratch, and a tune is not a print


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str], dict[str, Any]]:
    """Tune's own options, and the rest as ``--key=value`` overrides for every fit (list and as a dict)."""
    parser = ArgumentParser(
        prog="litstarter tune",
        description="Search hyperparameters with Optuna: each trial is a `litstarter fit` in its own run directory.",
        epilog="Other --key=value arguments (e.g. --trainer.max_epochs=5) are passed on to every trial's fit.",
    )
    parser.add_argument("--config", action="append", default=[], help="A config file, as for fit (repeatable).")
    parser.add_argument("--search", required=True, help="The search-space YAML, e.g. configs/search/default.yaml.")
    parser.add_argument("--trials", type=int, default=20, help="Trials in the study, counting earlier runs' (20).")
    parser.add_argument(
        "--storage", default=None, help="A SQLAlchemy URL; default: a journal file in the study folder."
    )
    parser.add_argument("--study_name", default=None, help="The study's name; default: the search file's name.")
    args, rest = parser.parse_known_args(argv)
    if args.trials < 1:
        raise UsageError(f"--trials must be >= 1, got {args.trials}")
    overrides, values = split_overrides(rest)
    return args, overrides, values


def split_overrides(tokens: list[str]) -> tuple[list[str], dict[str, Any]]:
    """``["--a.b", "1", "--c=x"]`` -> ``(["--a.b=1", "--c=x"], {"a.b": 1, "c": "x"})``."""
    normalised, values = [], {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--") or token in ("--",):
            raise UsageError(f"unexpected argument {token!r}; fit options take the form --key=value")
        if "=" in token:
            key, text = token[2:].split("=", 1)
        elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            key, text = token[2:], tokens[i + 1]
            i += 1
        else:
            raise UsageError(f"{token} needs a value (--key=value)")
        if f"--{key}" in REFUSED:
            raise UsageError(f"--{key} cannot be given to tune: every trial starts from scratch")
        normalised.append(f"--{key}={text}")
        if not key.endswith("+"):  # appends (--trainer.callbacks+=...) reach the fits but not best.yaml
            values[key] = yaml.safe_load(text)
        i += 1
    return normalised, values


def resolved_config(fit_args: list[str], blame: str) -> dict[str, Any]:
    """The config ``fit`` would run with (``--print_config``, nothing instantiated); a rejection names ``blame``."""
    from litstarter.cli import main as cli_main

    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            cli_main([*fit_args, "--print_config"])
    except UsageError as err:  # fit's own one-line refusal
        raise UsageError(f"{blame}: {err}") from None
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            lines = [line.strip() for line in err.getvalue().splitlines() if line.strip()]
            start = next((i for i, line in enumerate(lines) if line.startswith("error:")), None)
            reason = " ".join(lines[start:])[len("error:") :].strip() if start is not None else None
            raise UsageError(f"{blame}: {reason or (lines[-1] if lines else 'rejected by fit')}") from None
    return yaml.safe_load(out.getvalue()) or {}


def has_key(config: dict, dotted: str) -> bool:
    """Whether a dotted key exists in a resolved config. Below a mapping left unset (``backbone_kwargs: null``)
    any key may exist; the check with values (``--print_config``) then judges it."""
    node: Any = config
    for part in dotted.split("."):
        if node is None:
            return True
        if isinstance(node, dict) and part not in node and "class_path" in node:
            node = node.get("init_args") or {}  # a class by path (the task, the data): `model.lr` is its init_args'
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def check_space(space: SearchSpace, runner: TrialRunner, base: dict[str, Any]) -> None:
    """Every searched key exists and takes the ends of its range, under every config choice, and the objective
    is a metric the task logs, before any trial.

    ``base`` is the resolved config without the search space; one ``--print_config`` per extra config choice,
    then two with every key at its lowest and at its highest value (or first and last choice), then one batch
    of fit to see the metrics logged (:func:`~litstarter.extras.tune.objective.check_objective`).
    """
    keyed = [p for p in space.params if not p.picks_config]
    choosers = [p for p in space.params if p.picks_config]
    first_choice = [p.configs[0] for p in choosers]
    variants = [first_choice] + [
        [*first_choice[:i], c, *first_choice[i + 1 :]] for i, p in enumerate(choosers) for c in p.configs[1:]
    ]
    resolved = [base] if not choosers else []
    for chosen in variants if choosers else []:
        resolved.append(
            resolved_config(runner.fit_args({}, chosen), f"search space {space.path} ({', '.join(chosen)})")
        )
    for param in keyed:
        if not any(has_key(config, param.name) for config in resolved):
            parent = param.name.rpartition(".")[0] or "the top level"
            raise UsageError(
                f"search space {space.path}: params.{param.name} is not a config key "
                f"(fit --print_config shows the keys under {parent})"
            )
    for end in (0, -1):
        values = {p.name: p.examples()[end] for p in keyed}
        resolved_config(runner.fit_args(values, first_choice), f"search space {space.path}")
    check_objective(space, runner.fit_args({}, first_choice))


def study_folder(config: dict[str, Any], study_name: str) -> Path:
    """``<save_dir>/<name>/tune-<study>``, from the first logger of the resolved config."""
    logger = (config.get("trainer") or {}).get("logger")
    first = (logger[0] if isinstance(logger, list) and logger else logger) or {}
    args = first.get("init_args") if isinstance(first, dict) else None
    if not args or not args.get("save_dir"):
        raise UsageError(
            "tune needs trainer.logger to be a TensorBoardLogger or CSVLogger with a save_dir (configs/default.yaml)"
        )
    return Path(args["save_dir"]) / (args.get("name") or "") / f"tune-{study_name}"


def _logger_namespaces(config: dict[str, Any]) -> list[Namespace]:
    """The resolved config's loggers as ``class_path`` namespaces, as LightningCLI would hand them over."""
    logger = (config.get("trainer") or {}).get("logger")
    entries = logger if isinstance(logger, list) else [logger]
    return [Namespace(class_path=e["class_path"]) for e in entries if isinstance(e, dict) and "class_path" in e]


def check_mlflow(config: dict[str, Any]) -> None:
    """Each MLflow logger of the resolved config names an experiment and its tracking server answers, as a fit
    checks before training (here once, before any trial, rather than once per failing trial)."""
    logger = (config.get("trainer") or {}).get("logger")
    for entry in logger if isinstance(logger, list) else [logger]:
        if isinstance(entry, dict) and str(entry.get("class_path", "")).rsplit(".", 1)[-1] == MLFLOW:
            args = entry.get("init_args") or {}
            check_mlflow_settings(args.get("tracking_uri"), args.get("experiment_name"))


def show_optuna_logs() -> None:
    """Optuna's log lines on stderr, with a failed trial's error in one line (its traceback is in the run)."""
    root = logging.getLogger("optuna")
    if any(getattr(h, "litstarter", False) for h in root.handlers):
        return
    optuna.logging.disable_default_handler()
    handler = logging.StreamHandler()
    handler.litstarter = True
    handler.setFormatter(logging.Formatter("[optuna] %(message)s"))
    if not want_traceback():
        handler.addFilter(lambda record: setattr(record, "exc_info", None) or setattr(record, "exc_text", None) or True)
    root.addHandler(handler)


def main(argv: list[str]) -> int:
    """Run ``litstarter tune``; return the exit code."""
    args, overrides, override_values = parse_args(argv)
    base = resolved_config(["fit", *(a for c in args.config for a in ("--config", c)), *overrides], "fit config")
    seed = base.get("seed_everything")
    space = load_search_space(
        args.search, default_seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None
    )
    study_name = args.study_name or Path(args.search).stem
    if not re.fullmatch(r"[\w.-]+", study_name):
        raise UsageError(f"--study_name {study_name!r}: use letters, digits, '_', '-' and '.' (it names a folder)")
    study_dir = study_folder(base, study_name)
    check_loggers(Namespace(trainer=Namespace(logger=_logger_namespaces(base))))
    check_mlflow(base)
    runner = TrialRunner(args.config, overrides, space, study_dir)
    database = open_storage(args.storage, study_dir) if args.storage else None  # a database: check it first
    check_space(space, runner, base)
    storage = database or open_storage(None, study_dir)  # the journal only once all is well: it makes the folder
    show_optuna_logs()
    study = optuna.create_study(
        study_name=study_name,
        storage=storage,
        direction=space.direction,
        sampler=space.make_sampler(),
        pruner=space.make_pruner(),
        load_if_exists=True,
    )
    study_dir.mkdir(parents=True, exist_ok=True)
    write_search_yaml(space, ["litstarter", "tune", *argv], study_dir / "search.yaml")
    run_trials(study, runner, args.trials, study_dir)
    finish(study, space, args.config, override_values, study_dir)
    return 0


def run_trials(study: optuna.Study, runner: TrialRunner, n_trials: int, study_dir: Path) -> None:
    """Run trials one at a time until the study holds ``n_trials`` (finished or running, any worker's)."""
    while True:
        for number in fail_trials_of_dead_workers(study):
            print(
                f"litstarter tune: trial {number} was left RUNNING by a worker that is gone: marked FAIL",
                file=sys.stderr,
            )
        if len(study.get_trials(deepcopy=False)) >= n_trials:
            return
        study.optimize(runner, n_trials=1, catch=(TrialFailed,), gc_after_trial=True)
        write_trials_csv(study, study_dir / "trials.csv")


def finish(study: optuna.Study, space: SearchSpace, configs: list[str], overrides: dict, study_dir: Path) -> None:
    """Write trials.csv, best.yaml and the plots, and print the summary."""
    write_trials_csv(study, study_dir / "trials.csv")
    done = [t for t in study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
    skipped = write_plots(study, study_dir) if done else []
    print(summary_table(study, space))
    if not done:
        print(f"No trial completed: no best.yaml. See {study_dir / 'trials.csv'} for each trial's error.")
        return
    best = write_best_yaml(space, study, configs, overrides, study_dir / "best.yaml")
    print(f"Best: trial {study.best_trial.number}, {space.metric} = {study.best_value:.4f}; config {best}")
    print(f"Refit it: litstarter fit {' '.join(f'--config {c}' for c in configs)} --config {best}")
    for note in skipped:
        print(f"(skipped {note})")
    print(f"Study folder: {study_dir} (trials.csv, best.yaml, history.png, importance.png, search.yaml)")
