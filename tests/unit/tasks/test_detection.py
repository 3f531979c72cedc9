"""The detection task's own arguments are checked when it is built, before any data is read: a user's typo is one
line naming the key."""

from __future__ import annotations

import pytest

from litstarter.errors import UsageError
from litstarter.tasks.detection import ObjectDetector


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"head_convs": 0}, "model.head_convs must be >= 1"),
        ({"fpn_levels": 0}, "model.fpn_levels must be >= 1"),
        ({"detector": "retinanet", "head_convs": 2}, "model.head_convs sets FCOS's head; retinanet's is its own"),
    ],
)
def test_a_bad_head_or_pyramid_is_refused_in_one_line(options: dict, said: str) -> None:
    with pytest.raises(UsageError, match=said.replace("(", r"\(")) as refused:
        ObjectDetector(num_classes=3, **options)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(("detector", "convs"), [("fcos", 4), ("fcos", 2), ("retinanet", 4)])
def test_head_convs_is_recorded_so_the_checkpoint_rebuilds_the_same_head(detector: str, convs: int) -> None:
    task = ObjectDetector(detector=detector, num_classes=3, head_convs=convs, image_size=[48, 48], in_channels=1)
    assert task.hparams.head_convs == convs
    head = task.net.detector.head
    assert len(head.classification_head.conv) == convs * (3 if detector == "fcos" else 1)  # FCOS: conv, norm, ReLU
