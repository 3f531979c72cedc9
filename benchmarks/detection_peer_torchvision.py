"""torchvision's ``references/detection/train.py`` training our detection network: the peer side of
``detection_peer.py``.

    .venv/bin/python benchmarks/detection_peer_torchvision.py --reference <folder holding train.py> \\
        --network '{"architecture": {...}, "mean": [...], "std": [...]}' <train.py's arguments> --model litstarter_fcos

Imports the reference's ``train.py`` as a module and replaces ``torchvision.models.get_model`` so that
``--model litstarter_fcos`` gives :class:`LitstarterFCOS`; every other model name goes to torchvision as before.
The data, transforms, samplers, optimiser, schedules, checkpoints and COCO evaluation are the reference's,
untouched; its ``evaluate`` is wrapped only to keep what it computes. ``train.py`` asks for 91 classes (its
``--dataset coco``): the network keeps the architecture's own.

Printed last, one JSON line: the last evaluation's ``map`` (COCO's AP at IoU 0.50:0.95, area all, 100 detections)
and ``map50`` (at IoU 0.50), and the number of evaluations (one per epoch).

A part of ``benchmarks/detection_peer.py``, which runs it, not a benchmark: no smoke of its own;
``detection_peer.py --smoke`` runs it (and skips in one line without the reference's checkout).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torchvision
from torch import nn

from litstarter.models.detector import build_detector


class LitstarterFCOS(nn.Module):
    """Our ``Detector``'s torchvision FCOS (``build_detector``: FCOS on a feature pyramid over the backbone's
    stages) in torchvision's calling convention, with our normalisation in front.

    Training, ``model(images, targets)`` returns FCOS's losses; otherwise ``model(images)`` returns
    ``[{"boxes", "scores", "labels"}]``. Images are the reference's ``(3, H, W)`` floats in 0..1; labels are COCO's
    category ids 1..K, ours 0..K-1.

    Args:
        architecture: ``build_detector``'s architecture (the task's, as ``architecture_of`` gives it).
        mean: Per-channel mean on the 0..1 scale (ours: the train split's).
        std: Per-channel standard deviation on the 0..1 scale.
    """

    def __init__(self, architecture: dict, mean: list[float], std: list[float]) -> None:
        super().__init__()
        self.net = build_detector(architecture)
        self.net.set_normalization(mean, std)
        self.channels = int(architecture["in_channels"])

    def forward(self, images: list[torch.Tensor], targets: list[dict] | None = None):
        """As torchvision's detectors: losses while training, detections otherwise."""
        # The reference opens every PNG as RGB; a grey canvas's first channel is the grey image ours reads.
        x = [self.net.normalize(image[None, : self.channels] * 255)[0] for image in images]  # [(C, H, W)] float
        if not self.training:
            return [{**found, "labels": found["labels"] + 1} for found in self.net.detector(x)]
        return self.net.detector(x, [{**t, "labels": t["labels"] - 1} for t in targets])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", required=True, help="the folder holding the reference's train.py")
    parser.add_argument("--network", required=True, help="json: architecture, mean, std")
    ours, rest = parser.parse_known_args()
    sys.path.insert(0, ours.reference)
    import train  # the reference's: its engine, utils, presets, transforms and coco_* beside it

    network = json.loads(ours.network)
    stock = torchvision.models.get_model

    def get_model(name: str, **kwargs) -> nn.Module:
        if name != "litstarter_fcos":
            return stock(name, **kwargs)
        return LitstarterFCOS(network["architecture"], network["mean"], network["std"])

    stats = []  # COCOeval's 12 bbox figures after each evaluation, at full precision (its summary prints 3 digits)

    def evaluate(*args, **kwargs):
        evaluator = stock_evaluate(*args, **kwargs)
        stats.append(evaluator.coco_eval["bbox"].stats.tolist())
        return evaluator

    stock_evaluate, train.evaluate = train.evaluate, evaluate
    torchvision.models.get_model = get_model
    train.main(train.get_args_parser().parse_args(rest))
    print(json.dumps({"map": stats[-1][0], "map50": stats[-1][1], "evaluations": len(stats)}))


if __name__ == "__main__":
    main()
