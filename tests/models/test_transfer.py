"""init_from's rules: scalar buffers are no evidence of a fit, nothing of the backbone fitting is an error, and the
head-replaced reason is the true one."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from litstarter.models.classifier import build_classifier
from litstarter.models.transfer import load_matching_weights
from litstarter.models.weights import CheckpointError


def _net(widths: list[int], num_classes: int = 10):
    return build_classifier(
        {"backbone": "small_cnn", "backbone_kwargs": {"widths": widths}, "num_classes": num_classes, "in_channels": 1}
    )


def _weights(tmp_path: Path, net) -> Path:
    path = tmp_path / "weights.pt"
    torch.save(net.state_dict(), path)
    return path


def test_only_scalar_buffers_in_common_is_an_error_not_four_tensors_loaded(tmp_path: Path) -> None:
    source = _weights(tmp_path, _net([8, 16]))
    target = _net([32, 64, 128])
    before = {k: v.clone() for k, v in target.state_dict().items()}
    with pytest.raises(CheckpointError, match=r"No weight tensor of init_from .*0 tensors loaded \(0 backbone"):
        load_matching_weights(target, source, [str(i) for i in range(10)])
    assert all(torch.equal(before[k], v) for k, v in target.state_dict().items())  # nothing was loaded


def test_head_replaced_names_the_true_reason(tmp_path: Path) -> None:
    names = [str(i) for i in range(10)]
    # Same classes, other feature width: the head cannot load because the backbones differ, not the classes.
    source = _weights(tmp_path, _net([8, 16, 32]))
    target = _net([8, 16, 64])
    with pytest.warns(UserWarning, match="only part of the backbone loaded"):
        report = load_matching_weights(target, source, names)
    assert "features" in report.head_replaced and "num_classes" not in report.head_replaced
    # Other number of classes: that is the reason given, with both counts.
    source = _weights(tmp_path, _net([8, 16, 32], num_classes=5))
    report = load_matching_weights(_net([8, 16, 32]), source, names)
    assert report.head_replaced == "num_classes differs (checkpoint 5, this run 10)"
    assert report.backbone_matched and not report.mismatched
