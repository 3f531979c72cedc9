"""One fold = one ordinary ``litstarter fit`` in ``<study>/fold_<i>/``, then its best checkpoint on its held-out part.

The fit runs in the cv process (no second ``import lightning`` per fold) through the same ``litstarter.cli.main``
as ``litstarter fit``, with the fold's split file as its data, so ``litstarter fit --config <fold>/config.yaml``
reproduces it. After the fit the best checkpoint (by the config's own ``ModelCheckpoint`` monitor) is evaluated
once on the fold's validation part: those are the fold's figures, and its class probabilities are the fold's
out-of-fold predictions.

A fold is finished when its marker ``cv_fold.json`` exists; it is written last and atomically, after the
predictions (``oof.csv``). An unfinished fold with a ``checkpoints/last.ckpt`` continues from it
(``--ckpt_path``, Lightning's own resume into the same folder); one without any checkpoint starts again.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import torch
from lightning.pytorch.callbacks import Callback

from litstarter._engine.atomic_io import atomic_write, write_json
from litstarter.errors import UsageError

MARKER = "cv_fold.json"
PREDICTIONS = "oof.csv"
LAST = Path("checkpoints") / "last.ckpt"


def finished(fold_dir: Path) -> dict | None:
    """The fold's record if it finished, else ``None``."""
    marker = fold_dir / MARKER
    return json.loads(marker.read_text()) if marker.is_file() else None


def resume_args(fold_dir: Path) -> list[str]:
    """``--ckpt_path <fold>/checkpoints/last.ckpt`` for a fold stopped part-way; a fold folder without a checkpoint
    holds nothing to keep (its config and first events), so it is cleared and the fold starts again."""
    if (fold_dir / LAST).is_file():
        return ["--ckpt_path", str(fold_dir / LAST)]
    if fold_dir.exists():
        shutil.rmtree(fold_dir)
    return []


class TagMlflowRuns(Callback):
    """Tag every MLflow run of a fit with the study and the fold (``cv_study``, ``cv_fold``), so that a tracking
    UI groups a study's runs.

    Args:
        tags: The tags, e.g. ``{"cv_study": "runs/digits/cv-5", "cv_fold": "1"}``.
    """

    def __init__(self, tags: dict[str, str]) -> None:
        self.tags = tags

    def on_fit_start(self, trainer, pl_module) -> None:
        """Set the tags through each MLflow logger's client (``MlflowClient.set_tag``), on rank 0."""
        for logger in trainer.loggers:
            if type(logger).__name__ == "MLFlowLogger" and trainer.is_global_zero:
                for key, value in self.tags.items():
                    logger.experiment.set_tag(logger.run_id, key, value)


def fit(fit_args: list[str], run_dir: Path, tags: dict[str, str]):
    """Run ``litstarter fit`` with ``fit_args`` in ``run_dir``; return the CLI (trainer, model, data).

    Raises:
        KeyboardInterrupt: the fit was interrupted (Lightning stops at the batch and returns); rerun to resume.
    """
    from litstarter.cli import main as cli_main

    cli = cli_main(fit_args, callbacks=[TagMlflowRuns(tags)], run_dir=run_dir)
    if cli.trainer.interrupted:
        raise KeyboardInterrupt
    return cli


def best_epochs(trainer) -> int:
    """Epochs trained up to the best checkpoint (the last one without a monitored checkpoint)."""
    best = getattr(trainer.checkpoint_callback, "best_model_path", "")
    if best and getattr(trainer.checkpoint_callback, "monitor", None):
        return int(torch.load(best, map_location="cpu", weights_only=True)["epoch"]) + 1
    return int(trainer.current_epoch)


def evaluate(cli, ckpt: str | None) -> tuple[dict[str, float], np.ndarray]:
    """One validation epoch of ``ckpt`` (``best``, or the current weights) on the run's val split: its logged
    figures, and the task's probabilities of each val image ``(N, K)`` in the val loader's order.

    The probabilities are the logits that validation itself computes, caught by a forward hook (one pass, not
    two); a task that calls its forward more than once a batch (test-time augmentation) gets a second pass.
    """
    trainer, model, data = cli.trainer, cli.model, cli.datamodule
    trainer.limit_val_batches = 1.0  # a refit trains without validation, then evaluates once
    caught: list[torch.Tensor] = []
    hook = model.register_forward_hook(lambda module, args, out: caught.append(out.detach().float().cpu()))
    try:
        (figures,) = trainer.validate(model, datamodule=data, ckpt_path=ckpt, verbose=False)
    finally:
        hook.remove()
    logits = torch.cat(caught) if caught else torch.zeros(0)  # (N, K)
    if len(logits) != len(data.val_set):
        model.eval()
        with torch.no_grad():
            logits = torch.cat([model(x.to(model.device)).float().cpu() for x, _ in data.val_dataloader()])
    return {k: float(v) for k, v in figures.items()}, task_probabilities(model, logits.numpy())


def task_probabilities(model, logits: np.ndarray) -> np.ndarray:
    """The task's own outputs of ``(N, K)`` logits: its answers' (a softmax, a sigmoid per label, values)."""
    from litstarter.tasks.answers import answers_class

    if len(logits) == 0:
        return logits
    return answers_class(model.task_name)(model.class_names, model.answers_state()).outputs(logits)


def run_fold(
    fit_args: list[str], fold_dir: Path, fold: int, val_ids: list[str], id_column: str, tags: dict[str, str]
) -> dict:
    """Fit fold ``fold`` (continuing a stopped one), evaluate its best checkpoint, write its predictions and its
    marker; return its record."""
    cli = fit([*fit_args, *resume_args(fold_dir)], fold_dir, tags)
    best = "best" if getattr(cli.trainer.checkpoint_callback, "best_model_path", "") else None
    figures, probabilities = evaluate(cli, best)
    val_ids = val_order(cli.datamodule, val_ids)
    if len(probabilities) != len(val_ids):
        raise UsageError(f"fold {fold}: its val split holds {len(probabilities)} images, its split file {len(val_ids)}")
    write_predictions(fold_dir / PREDICTIONS, id_column, val_ids, probabilities)
    record = {
        "fold": fold,
        "n_val": len(val_ids),
        "best_epochs": best_epochs(cli.trainer),
        "epochs": int(cli.trainer.current_epoch),
        "monitor": getattr(cli.trainer.checkpoint_callback, "monitor", None),
        "metrics": figures,
        "task": cli.model.task_name,  # whose answers read the predictions (litstarter.tasks.answers)
        "answers_state": cli.model.answers_state(),
    }
    write_json(fold_dir / MARKER, record)
    return record


def val_order(data, listed: list[str]) -> list[str]:
    """The val images' names in the val loader's order: an image folder's cache order (by class, then as listed),
    else the order of the split file (the digits keep it)."""
    cache = getattr(data, "cache", None)
    return list(cache.column("val", "path")) if cache is not None else listed


def write_predictions(path: Path, id_column: str, ids: list[str], probabilities: np.ndarray) -> None:
    """``<id_column>,p0,p1,...``: each val image's outputs (the task's: probabilities, values), written atomically."""

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as handle:
            out = csv.writer(handle)
            out.writerow([id_column, *(f"p{k}" for k in range(probabilities.shape[1]))])
            out.writerows([i, *(f"{p:.6g}" for p in row)] for i, row in zip(ids, probabilities, strict=True))

    atomic_write(path, write)


def read_predictions(path: Path) -> dict[str, np.ndarray]:
    """:func:`write_predictions`' file as ``{id: probabilities}``."""
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    return {row[0]: np.array([float(p) for p in row[1:]]) for row in rows[1:]}
