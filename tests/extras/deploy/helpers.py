"""Builders the deploy extra's tests share."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


def read_csv(path: Path) -> list[dict]:
    """The rows of a CSV file (``infer``'s output) as dicts."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def eager_predictions(ckpt: Path, images: np.ndarray) -> np.ndarray:
    """The classes a checkpoint's network predicts, in eager PyTorch, for ``(N, C, H, W)`` uint8 images."""
    import torch

    from litstarter.extras.deploy.checkpoint import network_from_checkpoint

    net, _ = network_from_checkpoint(ckpt)
    with torch.inference_mode():
        return net(torch.from_numpy(images)).argmax(1).numpy()
