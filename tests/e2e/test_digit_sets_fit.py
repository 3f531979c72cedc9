"""The multi-label example trains offline: configs/data/digit_sets.yaml's own command, shortened (2 epochs on 400
canvases), learns above chance and leaves a multi-label run of the ten digits."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tests.helpers import CONFIGS, REPO, run_cli
from tests.test_configs import header_command

EXAMPLE = CONFIGS / "data" / "digit_sets.yaml"


def test_the_multilabel_example_fits_offline_and_learns(tmp_path: Path) -> None:
    words = header_command(EXAMPLE)  # litstarter fit --config ... --config configs/task/multilabel.yaml
    args = [str(REPO / w) if w.startswith("configs/") else w for w in words[1:]]
    short = ["--trainer.max_epochs=2", "--data.init_args.size=400", "--data.init_args.num_workers=0"]
    run_cli([*args, *short, f"--trainer.logger.init_args.save_dir={tmp_path}"])
    run = tmp_path / "digit_sets" / "version_0"
    found = json.loads((run / "metrics.json").read_text())
    names = [str(d) for d in range(10)]
    counts = [[found[f"test/{c}/{n}"] for c in ("tp", "fp", "fn", "tn")] for n in names]
    chance = sum((tp + fn) / (tp + fp + fn + tn) for tp, fp, fn, tn in counts) / len(names)  # AP of random scores
    assert found["test/map_macro"] > chance + 0.05, (found["test/map_macro"], chance)
    for key in ("auroc_macro", "f1_macro", "f1_micro", "subset_acc", "hamming"):
        assert f"test/{key}" in found, key
    checkpoint = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert checkpoint["task"] == "multilabel" and checkpoint["epoch"] == 1
    assert checkpoint["hyper_parameters"]["class_names"] == names
    assert checkpoint["hyper_parameters"]["backbone_kwargs"] == {"global_pool": "catavgmax"}
    assert checkpoint["state_dict"]["net.head.weight"].shape == (10, 256)  # average and max of 128 features
