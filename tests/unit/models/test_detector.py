"""The detection network: each of torchvision's detectors on our feature pyramid gives losses while training and
one padded (B, D, 6) tensor otherwise; backbones read by stage (a MobileNet's found by one forward pass that moves
no running statistic)."""

from __future__ import annotations

import pytest
import torch

from litstarter.errors import UsageError
from litstarter.models.detector import DETECTORS, build_detector
from litstarter.models.stages import read_stages, stage_channels
from litstarter.models.torchvision_backbones import torchvision_backbone


def architecture(detector: str = "fcos", backbone: str = "small_cnn", classes: int = 3) -> dict:
    return {"detector": detector, "backbone": backbone, "in_channels": 1, "num_classes": classes,
            "image_size": [48, 48], "max_detections": 20, "score_threshold": 0.0}  # fmt: skip


def targets(label: int = 2) -> list[dict[str, torch.Tensor]]:
    return [
        {"boxes": torch.tensor([[4.0, 4.0, 20.0, 22.0]]), "labels": torch.tensor([label])},
        {"boxes": torch.zeros((0, 4)), "labels": torch.zeros(0, dtype=torch.int64)},  # an image without boxes
    ]


@pytest.mark.parametrize("classes", [3, 1])  # one class: the background is implicit (or the network's own)
@pytest.mark.parametrize("detector", DETECTORS)
def test_each_detector_trains_on_losses_and_answers_one_padded_tensor(detector: str, classes: int) -> None:
    torch.manual_seed(0)
    net = build_detector(architecture(detector, classes=classes)).train()
    images = torch.randint(0, 256, (2, 1, 48, 48)).float()
    losses = net(images, targets(classes - 1))
    assert losses and all(torch.isfinite(v) for v in losses.values())
    sum(losses.values()).backward()
    with torch.no_grad():
        out = net.eval()(images)
    assert out.shape == (2, 20, 6)
    found = out[out[..., 5] >= 0]
    assert len(found) and ((found[:, 5] >= 0) & (found[:, 5] < classes)).all()  # ours, the background taken off
    assert (out[out[..., 5] < 0][:, 4] == 0).all()  # padding rows score 0


def test_a_mobilenets_stages_are_found_without_moving_its_running_statistics() -> None:
    backbone = torchvision_backbone("mobilenet_v3_small", in_channels=1).train()
    before = {k: v.clone() for k, v in backbone.state_dict().items()}
    widths = stage_channels(backbone)
    assert all(torch.equal(before[k], v) for k, v in backbone.state_dict().items())
    features = read_stages(backbone.eval(), torch.zeros(1, 1, 64, 64))
    assert [f.shape[1] for f in features] == widths
    assert [f.shape[-1] for f in features] == [64 // 2 ** (i + 1) for i in range(len(features))]


@pytest.mark.parametrize(("levels", "anchors"), [(3, (8, 16, 32, 64)), (2, (8, 16, 32)), (1, (8, 16))])
def test_the_pyramid_reads_the_coarsest_fpn_levels_stages(levels: int, anchors) -> None:
    net = build_detector(architecture() | {"image_size": [64, 64], "fpn_levels": levels})
    maps = net.detector.backbone(torch.zeros(1, 1, 64, 64))
    strides = [64 // m.shape[-1] for m in maps.values()]
    assert strides == [16 // 2 ** (levels - 1) * 2**i for i in range(levels + 1)]  # small_cnn: 4, 8, 16 + pool
    assert tuple(s[0] for s in net.detector.anchor_generator.sizes) == anchors


def test_a_checkpoint_from_before_fpn_levels_keeps_three_stages_and_a_bad_value_is_refused() -> None:
    assert build_detector(architecture()).detector.backbone.levels == 3  # no fpn_levels key: the old pyramid
    with pytest.raises(UsageError, match="model.fpn_levels must be >= 1"):
        build_detector(architecture() | {"fpn_levels": 0})


@pytest.mark.parametrize("convs", [4, 2, 1])
def test_head_convs_sets_the_depth_of_both_fcos_branches(convs: int) -> None:
    head = build_detector(architecture() | {"head_convs": convs}).detector.head
    for branch in (head.classification_head, head.regression_head):
        assert sum(isinstance(m, torch.nn.Conv2d) for m in branch.conv) == convs


def test_a_checkpoint_from_before_head_convs_loads_into_four_and_other_detectors_refuse_another_depth() -> None:
    from torchvision.models.detection import FCOS

    old = build_detector(architecture())  # no head_convs key: torchvision's own head, four convs a branch
    stock = FCOS(old.detector.backbone, 3, anchor_generator=old.detector.anchor_generator)
    assert old.detector.head.state_dict().keys() == stock.head.state_dict().keys()
    with pytest.raises(UsageError, match="model.head_convs must be >= 1"):
        build_detector(architecture() | {"head_convs": 0})
    with pytest.raises(UsageError, match="model.head_convs sets FCOS's head; retinanet's is its own: leave it at 4"):
        build_detector(architecture("retinanet") | {"head_convs": 2})
