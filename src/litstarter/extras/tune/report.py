"""What a study leaves in its folder: trials.csv, best.yaml, search.yaml, history.png, importance.png, a summary.

Every file is written whole, then renamed into place, so workers finishing together never leave a torn one.
"""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.trial import FrozenTrial, TrialState

from litstarter._engine.atomic_io import atomic_write
from litstarter.extras.tune.search_space import SearchSpace
from litstarter.extras.tune.storage import WORKER_ATTR
from litstarter.extras.tune.trial import ERROR_ATTR, RUN_DIR_ATTR


def trial_error(trial: FrozenTrial) -> str:
    """A FAIL trial's error in one line; one that has none lost its worker (or was stopped by Ctrl-C)."""
    if trial.state != TrialState.FAIL:
        return ""
    if ERROR_ATTR in trial.user_attrs:
        return trial.user_attrs[ERROR_ATTR]
    worker = trial.user_attrs.get(WORKER_ATTR) or {}
    where = f" ({worker.get('host')}, pid {worker.get('pid')})" if worker else ""
    return f"no result: its worker{where} stopped before the trial ended"


def write_trials_csv(study: optuna.Study, path: Path) -> Path:
    """One row per trial: number, state, value, duration, epochs reported, run directory, error, parameters."""
    trials = study.get_trials(deepcopy=False)
    param_names = sorted({name for t in trials for name in t.params})
    header = ["number", "state", "value", "duration_s", "epochs", "run_dir", "error", *param_names]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    for t in trials:
        duration = f"{t.duration.total_seconds():.1f}" if t.duration else ""
        row = [t.number, t.state.name, "" if t.value is None else t.value, duration, len(t.intermediate_values)]
        writer.writerow(
            [*row, t.user_attrs.get(RUN_DIR_ATTR, ""), trial_error(t), *(t.params.get(p, "") for p in param_names)]
        )
    return atomic_write(path, lambda tmp: tmp.write_text(buffer.getvalue()))


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"model.dropout": 0.1}`` -> ``{"model": {"dropout": 0.1}}``."""
    tree: dict[str, Any] = {}
    for key, value in flat.items():
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge ``top`` over ``base`` (mappings merge, anything else replaces), as stacked configs do."""
    merged = dict(base)
    for key, value in top.items():
        both = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = merge(merged[key], value) if both else value
    return merged


def best_config(space: SearchSpace, trial: FrozenTrial, overrides: dict[str, Any]) -> dict[str, Any]:
    """The best trial as one config: its chosen config files, then tune's own overrides, then its tuned keys."""
    config: dict[str, Any] = {}
    for param in space.params:
        if param.picks_config:
            config = merge(config, yaml.safe_load(Path(trial.params[param.name]).read_text()) or {})
    config = merge(config, nest(overrides))
    return merge(config, nest({p.name: trial.params[p.name] for p in space.params if not p.picks_config}))


def write_best_yaml(space: SearchSpace, study: optuna.Study, configs: list[str], overrides: dict, path: Path) -> Path:
    """``best.yaml``: ``litstarter fit --config <the tune's configs> --config best.yaml`` refits the best trial."""
    best = study.best_trial
    refit = " ".join(["litstarter fit", *(f"--config {c}" for c in configs), f"--config {path}"])
    header = (
        f"# The best trial of study {study.study_name!r}: trial {best.number}, {space.metric} = {best.value:.6g}"
        f" ({space.direction}), run {best.user_attrs.get(RUN_DIR_ATTR, '?')}\n"
        f"# Refit it (same seed, same result):\n#   {refit}\n"
    )
    body = yaml.safe_dump(best_config(space, best, overrides), sort_keys=False)
    return atomic_write(path, lambda tmp: tmp.write_text(header + body))


def write_search_yaml(space: SearchSpace, command: list[str], path: Path) -> Path:
    """``search.yaml``: the search space and the full command, so the sweep itself can be run again."""
    record = {"command": " ".join(command), "search_file": str(space.path), **space.raw}
    return atomic_write(path, lambda tmp: tmp.write_text(yaml.safe_dump(record, sort_keys=False)))


def write_plots(study: optuna.Study, study_dir: Path) -> list[str]:
    """``history.png`` and ``importance.png`` (Optuna's matplotlib plots); returns why any was skipped."""
    from matplotlib import pyplot as plt
    from optuna.visualization import matplotlib as optuna_plots

    skipped = []
    for name, plot in (
        ("history.png", optuna_plots.plot_optimization_history),
        ("importance.png", optuna_plots.plot_param_importances),
    ):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                axes = plot(study)
        except (ValueError, RuntimeError) as err:  # e.g. importance needs two finished trials
            skipped.append(f"{name}: {err}")
            continue
        figure = axes.figure
        figure.tight_layout()
        atomic_write(study_dir / name, lambda tmp, fig=figure: fig.savefig(tmp, format="png", dpi=100))
        plt.close(figure)
    return skipped


def summary_table(study: optuna.Study, space: SearchSpace, top: int = 10) -> str:
    """The best ``top`` finished trials as a text table, with the count of each state."""
    trials = study.get_trials(deepcopy=False)
    counts = {s.name: sum(t.state == s for t in trials) for s in TrialState if any(t.state == s for t in trials)}
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    done.sort(key=lambda t: t.value, reverse=space.direction == "maximize")
    names = [p.name for p in space.params]
    rows = [["trial", space.metric, "seconds", *names]]
    for t in done[:top]:
        seconds = f"{t.duration.total_seconds():.0f}" if t.duration else ""
        rows.append([str(t.number), f"{t.value:.4f}", seconds, *(_short(t.params.get(n, "")) for n in names)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    states = ", ".join(f"{n} {s}" for s, n in counts.items())
    return f"study {study.study_name!r}: {len(trials)} trials ({states})\n" + "\n".join(lines)


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return Path(value).stem if isinstance(value, str) and value.endswith(".yaml") else str(value)
