"""A linear baseline beside every score: logistic regression on downsampled raw pixels, fitted in seconds on the
same split the network was tested on, so that a network which a linear model matches says so.

On a small or simple set a linear model can beat the network (a tiny set of grey crops: logistic regression 1.00,
the network 0.90); nothing else would tell the user. The images are averaged down to at most ``SIDE`` pixels a
side, at most 4,000 training images are used (a seeded draw), and the solver's iterations are capped: a few
seconds whatever the data.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from litstarter._engine.atomic_io import write_json

__all__ = [
    "Baseline",
    "add_baseline_to_metrics",
    "add_regression_baselines",
    "fit_linear_baseline",
    "fit_regression_baselines",
]

log = logging.getLogger("litstarter")

#: Pixels a side the images are averaged down to (never up).
SIDE = 16
#: Training images the baseline fits on at most, and held-out images it is scored on (seeded draws beyond that).
_MAX_TRAIN = 4000
_MAX_SCORED = 10000
#: The network is "clearly better" when it makes at most this fraction of the baseline's test errors (on the 8x8
#: digits: 1% against 2%, clearly better; a tiny set at 0.90 against 1.00, not).
_ERROR_RATIO = 0.75


@dataclass(frozen=True)
class Baseline:
    """A baseline's scores on the held-out split."""

    acc: float
    f1_macro: float
    seconds: float
    train_images: int


def pixels(images, side: int = SIDE, chunk: int = 512) -> np.ndarray:
    """``(N, C, H, W)`` uint8 images (an array or a memory map) as ``(N, C*h*w)`` floats in 0..1, averaged down to
    at most ``side`` a side, ``chunk`` images at a time (a large split is never all in memory)."""
    out = []
    for start in range(0, len(images), chunk):
        batch = torch.from_numpy(np.array(images[start : start + chunk], dtype=np.float32)).div_(255.0)
        h, w = batch.shape[-2:]
        if max(h, w) > side:
            batch = F.adaptive_avg_pool2d(batch, (min(h, side), min(w, side)))
        out.append(batch.flatten(1).numpy())
    return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


def _draw(n: int, cap: int, seed: int) -> np.ndarray:
    """Sorted indices of at most ``cap`` of ``n`` items (all of them when ``n <= cap``)."""
    if n <= cap:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=cap, replace=False))


def fit_linear_baseline(
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    num_classes: int,
    seed: int = 0,
    max_train: int = _MAX_TRAIN,
) -> Baseline | None:
    """Logistic regression on the raw pixels of ``train`` (``(images, labels)``), scored on ``test`` (at most
    :data:`_MAX_SCORED` of it).

    Returns None when the training images hold fewer than two classes (nothing to fit).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    start = time.perf_counter()
    chosen = _draw(len(train[1]), max_train, seed)
    x, y = pixels(train[0][chosen]), np.asarray(train[1])[chosen]
    scored = _draw(len(test[1]), _MAX_SCORED, seed)
    if len(np.unique(y)) < 2 or len(test[1]) == 0:
        return None
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=200, C=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # capped on purpose: a baseline, not a tuned model
        model.fit(x, y)
    predicted = model.predict(pixels(test[0][scored]))
    truth = np.asarray(test[1])[scored]
    f1 = f1_score(truth, predicted, average="macro", labels=list(range(num_classes)), zero_division=0)
    seconds = time.perf_counter() - start
    return Baseline(float(accuracy_score(truth, predicted)), float(f1), seconds, len(y))


def verdict(
    baseline: Baseline, network_acc: float, train_images: int, image_size: tuple[int, int], epochs: int | None = None
) -> str | None:
    """One line, with the likeliest reasons and switches, when the network does not beat the baseline clearly
    (:data:`_ERROR_RATIO`)."""
    if network_acc > baseline.acc and 1.0 - network_acc <= _ERROR_RATIO * (1.0 - baseline.acc):
        return None
    reasons = [
        f"{train_images} training images may be too few for a network: start from pretrained weights (a torchvision"
        " backbone with model.weights) or model.init_from",
        "the augmentation or small_cnn's per-image standardisation may remove what the class is: try"
        " --data.augmentation null, or --model.backbone_kwargs '{standardize: false}'",
        f"at {image_size[0]}x{image_size[1]} px the task may be simple enough for a linear model; that can be the"
        " right answer",
    ]
    if epochs is not None and epochs < 10:
        reasons.insert(0, f"{epochs} epoch(s) may be too short: raise trainer.max_epochs")
    reasons = reasons[:3]
    return (
        f"a linear model on raw pixels scores {baseline.acc:.2f} test accuracy here, the network {network_acc:.2f}:"
        f" the network is not clearly better. Likeliest: {'; '.join(reasons)} (--baseline false skips this check)"
    )


def _log_to_loggers(loggers, scores: dict[str, float], step: int) -> None:
    """``scores`` to each of a run's Lightning loggers (TensorBoard, MLflow, CSV), as test metrics at ``step``.

    They come after the test, which finalised the loggers; each is finalised again, so that TensorBoard writes its
    events and MLflow's run ends as it did.
    """
    for logger in loggers:
        logger.log_metrics(scores, step=step)
        logger.finalize("success")


def add_baseline_to_metrics(
    datamodule, metrics_path: Path, seed: int = 0, epochs: int | None = None, trainer=None
) -> Baseline | None:
    """Fit the baseline on an array data module's train split, score it on the split ``test`` used, and add
    ``test/baseline_acc`` and ``test/baseline_f1_macro`` to ``metrics_path`` beside the network's, and to the
    ``trainer``'s loggers (at its last step); log the scores, and the :func:`verdict` when the network is not
    clearly better.

    Nothing happens (None) for a data module without array splits (``train_set.images``) or without metrics.
    """
    train = getattr(datamodule, "train_set", None)
    held = getattr(datamodule, f"{getattr(datamodule, 'test_split', 'test')}_set", None)
    if not hasattr(train, "images") or not hasattr(held, "images") or not metrics_path.is_file():
        return None
    baseline = fit_linear_baseline(
        (train.images, train.targets), (held.images, held.targets), datamodule.num_classes, seed
    )
    if baseline is None:
        return None
    metrics = json.loads(metrics_path.read_text())
    scores = {"test/baseline_acc": baseline.acc, "test/baseline_f1_macro": baseline.f1_macro}
    metrics.update(scores)
    write_json(metrics_path, metrics)
    if trainer is not None:
        _log_to_loggers(trainer.loggers, scores, trainer.global_step)
    log.info(
        f"baseline: logistic regression on raw pixels ({baseline.train_images} training images, {baseline.seconds:.1f}"
        f" s): test accuracy {baseline.acc:.3f}, macro-F1 {baseline.f1_macro:.3f}; written to {metrics_path.name}"
    )
    size = tuple(getattr(datamodule, "image_size", None) or train.images.shape[-2:])
    line = verdict(baseline, float(metrics.get("test/acc", 0.0)), len(train), size, epochs)
    if line:
        log.warning(line)
    return baseline


def fit_regression_baselines(
    train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray], seed: int = 0
) -> dict[str, float] | None:
    """A mean predictor (the train split's mean of each target) and ridge regression on the raw pixels of
    ``train``, scored on ``test``: ``{"test/baseline_mean_mae", "test/baseline_ridge_mae", "test/baseline_ridge_r2"}``
    (MAE and R² averaged over the targets, as the task's). None without train or test images."""
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    chosen, scored = _draw(len(train[1]), _MAX_TRAIN, seed), _draw(len(test[1]), _MAX_SCORED, seed)
    if len(chosen) < 2 or len(scored) == 0:
        return None
    y = np.asarray(train[1], dtype=np.float64)[chosen].reshape(len(chosen), -1)
    truth = np.asarray(test[1], dtype=np.float64)[scored].reshape(len(scored), -1)
    model = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-2, 4, 13)))
    model.fit(pixels(train[0][chosen]), y)
    predicted = model.predict(pixels(test[0][scored])).reshape(truth.shape)
    total = ((truth - truth.mean(axis=0)) ** 2).sum(axis=0)
    r2 = 1.0 - ((truth - predicted) ** 2).sum(axis=0) / np.where(total > 0, total, 1.0)
    return {
        "test/baseline_mean_mae": float(np.abs(truth - y.mean(axis=0)).mean()),
        "test/baseline_ridge_mae": float(np.abs(truth - predicted).mean()),
        "test/baseline_ridge_r2": float(r2.mean()),
    }


def add_regression_baselines(
    datamodule, metrics_path: Path, seed: int = 0, epochs: int | None = None, trainer=None
) -> dict[str, float] | None:
    """:func:`fit_regression_baselines` on an array data module's train split, scored on the split ``test`` used,
    written beside the network's scores in ``metrics_path`` and to the ``trainer``'s loggers, with a line when
    the network's test MAE is not below both baselines'. Nothing happens (None) without array splits or metrics."""
    train = getattr(datamodule, "train_set", None)
    held = getattr(datamodule, f"{getattr(datamodule, 'test_split', 'test')}_set", None)
    if not hasattr(train, "images") or not hasattr(held, "images") or not metrics_path.is_file():
        return None
    scores = fit_regression_baselines((train.images, train.targets), (held.images, held.targets), seed)
    if scores is None:
        return None
    metrics = json.loads(metrics_path.read_text())
    metrics.update(scores)
    write_json(metrics_path, metrics)
    if trainer is not None:
        _log_to_loggers(trainer.loggers, scores, trainer.global_step)
    network = float(metrics.get("test/mae", float("nan")))
    log.info(
        f"baselines: test MAE {scores['test/baseline_mean_mae']:.4g} predicting the train mean,"
        f" {scores['test/baseline_ridge_mae']:.4g} by ridge regression on raw pixels; the network's"
        f" {network:.4g}; written to {metrics_path.name}"
    )
    best = min(scores["test/baseline_mean_mae"], scores["test/baseline_ridge_mae"])
    if not network < best:
        log.warning(
            f"the network's test MAE {network:.4g} is not below the best baseline's {best:.4g}: train longer"
            " (trainer.max_epochs), start from pretrained weights (model.weights), or check that the images show"
            " what the target measures (--baseline false skips this check)"
        )
    return scores
