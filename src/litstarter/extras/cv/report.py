"""A study's results: ``cv_metrics.json`` (each fold, and mean ± std of every validation figure),
``oof_predictions.csv`` (every training image once, with its fold's outputs) and the printed table."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from litstarter._engine.atomic_io import atomic_write, write_json
from litstarter.extras.cv.pool import Pool

METRICS_FILE = "cv_metrics.json"
OOF_FILE = "oof_predictions.csv"


def summarise(records: list[dict]) -> dict[str, dict[str, float]]:
    """``{metric: {"mean", "std"}}`` over the folds (std with ``ddof=1``: the spread of a fold's figure)."""
    names = sorted(set.intersection(*(set(r["metrics"]) for r in records)))
    summary = {}
    for name in names:
        values = np.array([r["metrics"][name] for r in records], dtype=np.float64)
        std = float(values.std(ddof=1)) if len(values) > 1 else 0.0
        summary[name] = {"mean": float(values.mean()), "std": std}
    return summary


def write_oof(path: Path, pool: Pool, folds: np.ndarray, predictions: dict[str, np.ndarray], answers: list) -> dict:
    """Write ``oof_predictions.csv`` in pool order: ``<id>``, the target as its kind writes it (``label``;
    ``labels``; one column per target), ``fold`` (from 1), ``predicted`` and the outputs (``prob_<class>``,
    ``value_<target>``), each fold's by its own task answers (``answers[fold]``: its thresholds). Returns the
    out-of-fold figure, the task's headline score over every image once: ``{"name", "key", "value"}``."""
    names, kind = pool.class_names, pool.kind
    rows, outputs = [], []
    for item, target, fold in zip(pool.ids, pool.targets, folds, strict=True):
        output = predictions[item]
        shown = [*kind.cells(target, names), int(fold) + 1, answers[fold].predicted(output)]
        rows.append([item, *shown, *(f"{p:.6g}" for p in output)])
        outputs.append(output)
    first = answers[0]
    columns = [pool.id_column, *kind.column(names), "fold", "predicted", *first.output_columns()]

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as handle:
            out = csv.writer(handle)
            out.writerow(columns)
            out.writerows(rows)

    atomic_write(path, write)
    value = first.scored(np.array(outputs), pool.targets) if rows else float("nan")
    return {"name": first.score_name, "key": first.metric_name, "value": value}


def write_metrics(path: Path, study: dict, records: list[dict], oof: dict, refit: dict | None) -> dict:
    """Write ``cv_metrics.json``; return what it holds (``oof``: the number of images and the out-of-fold figure
    under the task's metric name, e.g. ``acc``)."""
    result = {
        **study,
        "folds": records,
        "summary": summarise(records),
        "oof": {"n": sum(r["n_val"] for r in records), oof["key"]: oof["value"]},
        "chosen_epochs": chosen_epochs(records),
    }
    if refit is not None:
        result["refit"] = refit
    write_json(path, result)
    return result


def chosen_epochs(records: list[dict]) -> int:
    """The epoch count a refit trains for: the median of the folds' best epochs, rounded half up."""
    return int(np.floor(np.median([r["best_epochs"] for r in records]) + 0.5))


def table(records: list[dict], summary: dict, oof: dict) -> str:
    """One row per fold and a mean ± std row, over the scalar figures (per-class ones are in the JSON)."""
    shown = [name for name in summary if name.count("/") == 1][:6]
    head = ["fold", "n_val", "best_ep", *shown]
    rows = [
        [str(r["fold"]), str(r["n_val"]), str(r["best_epochs"]), *(f"{r['metrics'][n]:.4f}" for n in shown)]
        for r in records
    ]
    rows.append(["mean±std", "", "", *(f"{summary[n]['mean']:.4f}±{summary[n]['std']:.4f}" for n in shown)])
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in [head, *rows]]
    return "\n".join([*lines, f"out-of-fold {oof['name']} (every training image once): {oof['value']:.4f}"])
