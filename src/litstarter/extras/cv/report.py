"""A study's results: ``cv_metrics.json`` (each fold, and mean ± std of every validation figure),
``oof_predictions.csv`` (every training image once, with its fold's probabilities) and the printed table."""

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


def write_oof(path: Path, pool: Pool, folds: np.ndarray, predictions: dict[str, np.ndarray]) -> float:
    """Write ``oof_predictions.csv`` (pool order: ``<id>,label,fold,predicted,prob_<class>...``, folds from 1; for
    label sets ``<id>,labels,fold,predicted,prob_<label>...``, ``;``-joined, predicted at 0.5); return its accuracy
    (for label sets, the exact-match share)."""
    names = pool.class_names
    rows, correct = [], 0
    for item, target, fold in zip(pool.ids, pool.labels, folds, strict=True):
        probabilities = predictions[item]
        if pool.label_sets:
            predicted = (probabilities >= 0.5).astype(np.float64)
            correct += bool(np.array_equal(predicted, (np.asarray(target) > 0).astype(np.float64)))
        else:
            predicted = int(np.argmax(probabilities))
            correct += predicted == target
        shown = [pool.target_text(target), int(fold) + 1, pool.target_text(predicted)]
        rows.append([item, *shown, *(f"{p:.6g}" for p in probabilities)])

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as handle:
            out = csv.writer(handle)
            target = "labels" if pool.label_sets else "label"
            out.writerow([pool.id_column, target, "fold", "predicted", *(f"prob_{n}" for n in names)])
            out.writerows(rows)

    atomic_write(path, write)
    return correct / len(rows)


def write_metrics(path: Path, study: dict, records: list[dict], oof_accuracy: float, refit: dict | None) -> dict:
    """Write ``cv_metrics.json``; return what it holds."""
    result = {
        **study,
        "folds": records,
        "summary": summarise(records),
        "oof": {"n": sum(r["n_val"] for r in records), "acc": oof_accuracy},
        "chosen_epochs": chosen_epochs(records),
    }
    if refit is not None:
        result["refit"] = refit
    write_json(path, result)
    return result


def chosen_epochs(records: list[dict]) -> int:
    """The epoch count a refit trains for: the median of the folds' best epochs, rounded half up."""
    return int(np.floor(np.median([r["best_epochs"] for r in records]) + 0.5))


def table(records: list[dict], summary: dict, oof_accuracy: float) -> str:
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
    return "\n".join([*lines, f"out-of-fold accuracy (every training image once): {oof_accuracy:.4f}"])
