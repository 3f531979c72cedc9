"""What a run reports: metrics.json with the full metric set, the confusion-matrix image, TensorBoard figures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from litstarter.metrics import (
    _TIE_BREAK,
    classification_metrics,
    scalar_metrics,
    selection_score,
    split_confusion_matrix,
)
from tests.helpers import fast_fit_args, run_cli, tensorboard_events

CLASSES = [str(d) for d in range(10)]


def test_metrics_json_has_the_full_metric_set_and_it_is_consistent(digits_run: Path) -> None:
    metrics = json.loads((digits_run / "metrics.json").read_text())
    expected = {"test/loss", "test/acc", "test/auroc_macro", "test/ece"}
    expected |= {f"test/{m}_macro" for m in ("precision", "recall", "f1")}
    expected |= {f"test/recall/{name}" for name in CLASSES}
    assert expected <= set(metrics), sorted(expected - set(metrics))
    assert metrics.pop("test_split") == "test"  # a held-out test split, not val
    assert metrics.pop("tta") == []  # no test-time augmentation unless model.tta asks for it
    for key, value in metrics.items():
        assert key == "test/loss" or 0.0 <= value <= 1.0, (key, value)
    assert not [key for key in metrics if key.endswith("_micro")]  # single-label: each would equal test/acc
    per_class = [metrics[f"test/recall/{name}"] for name in CLASSES]
    assert np.mean(per_class) == pytest.approx(metrics["test/recall_macro"], abs=1e-6)
    assert metrics["test/auroc_macro"] > 0.95 and metrics["test/ece"] < 0.3
    # A linear model's scores beside the network's, on the same test split.
    assert {"test/baseline_acc", "test/baseline_f1_macro"} <= set(metrics)


def test_confusion_matrix_png_is_a_readable_image_beside_metrics_json(digits_run: Path) -> None:
    with Image.open(digits_run / "confusion_matrix.png") as image:
        image.verify()
    with Image.open(digits_run / "confusion_matrix.png") as image:
        pixels = np.asarray(image.convert("L"), dtype=np.float32)
    assert min(pixels.shape) >= 300
    assert pixels.std() > 20, "the figure looks blank"


def test_confusion_matrix_figures_reach_tensorboard_for_val_and_test(digits_run: Path) -> None:
    images = set()
    for events_file in digits_run.glob("events.out.tfevents.*"):
        events = tensorboard_events(events_file, images=True)
        images |= set(events.Tags()["images"])
        scalars = set(events.Tags()["scalars"])
        if "train/grad_norm" in scalars:  # the fit's events file
            assert {"train/device/samples_per_sec", "val/auroc_macro", "val/recall/3"} <= scalars, sorted(scalars)
            assert any(t.startswith("lr-") for t in scalars)
    assert {"val/confusion_matrix", "test/confusion_matrix"} <= images, images


def test_per_class_values_are_keyed_by_class_name() -> None:
    metrics = classification_metrics(3, "val")
    probs = torch.tensor([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    metrics.update(probs, torch.tensor([0, 1, 2, 2]))
    values, matrix = split_confusion_matrix(metrics.compute())
    assert matrix.tolist() == [[1, 0, 0], [0, 1, 0], [0, 1, 1]]
    scalars = scalar_metrics(values, ["cat", "dog", "red/fox"])
    assert scalars["val/recall/cat"] == 1.0 and scalars["val/recall/red_fox"] == 0.5
    assert "val/recall" not in scalars
    with pytest.raises(ValueError, match="val/recall"):
        scalar_metrics(values, ["cat", "dog"])


def test_selection_follows_macro_f1_and_only_a_tie_goes_to_the_lower_loss() -> None:
    """Macro-F1 of 1.0 at two epochs (a small validation split saturates): the lower loss wins the tie; a real
    macro-F1 step, even one image's among 5,000, beats any loss."""
    f1, loss = torch.tensor, torch.tensor
    assert selection_score(f1(1.0), loss(0.05)) > selection_score(f1(1.0), loss(0.40))
    one_image = 1 / 5000
    assert selection_score(f1(0.9 + one_image), loss(5.0)) > selection_score(f1(0.9), loss(0.0))
    assert 0 < selection_score(f1(0.5), loss(0.3)) - 0.5 < _TIE_BREAK


def test_validation_logs_the_selection_score_beside_its_parts(digits_run: Path) -> None:
    events = tensorboard_events(digits_run)
    f1, loss, select = (events.Scalars(tag) for tag in ("val/f1_macro", "val/loss", "val/select"))
    assert len(select) == len(f1) == len(loss)
    for a, b, c in zip(f1, loss, select, strict=True):
        assert c.value == pytest.approx(a.value + _TIE_BREAK / (1 + b.value), abs=1e-6)


def test_baseline_false_writes_no_baseline(tmp_path: Path) -> None:
    cli = run_cli([*fast_fit_args(tmp_path, epochs=1), "--trainer.limit_train_batches=2", "--baseline=false"])
    metrics = json.loads((Path(cli.trainer.log_dir) / "metrics.json").read_text())
    assert "test/acc" in metrics and not [key for key in metrics if "baseline" in key]
