"""The segmentation network: logits at every pixel of any input size, from small_cnn's stages, a torchvision ResNet
or an smp model; a classification checkpoint of ours starts its encoder; exports trace it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from litstarter._engine.init_from import load_matching_weights
from litstarter.errors import UsageError
from litstarter.models.build import build_network
from litstarter.models.classifier import Classifier
from litstarter.models.segmenter import Segmenter
from litstarter.models.stages import stage_channels


def architecture(backbone: str = "small_cnn", **extra) -> dict:
    return {"backbone": backbone, "num_classes": 5, "in_channels": 1, "image_size": (48, 48), "dropout": 0.0,
            "decoder_channels": None, **extra}  # fmt: skip


BACKBONES = ["small_cnn", "resnet18", "mobilenet_v3_small", "timm/mobilenetv3_small_100", "smp/unet/resnet18"]


@pytest.mark.parametrize("backbone", BACKBONES)
@pytest.mark.parametrize("size", [(48, 48), (50, 37)])
def test_logits_come_at_every_pixel_of_the_input(backbone: str, size: tuple[int, int]) -> None:
    pytest.importorskip({"smp": "segmentation_models_pytorch", "tim": "timm"}.get(backbone[:3], "torch"))
    net = build_network(architecture(backbone)).eval()
    with torch.no_grad():
        logits = net(torch.randint(0, 256, (2, 1, *size), dtype=torch.uint8))
    assert logits.shape == (2, 5, *size) and torch.isfinite(logits).all()


def test_a_classification_checkpoint_starts_the_encoder_and_the_decoder_starts_fresh(tmp_path: Path) -> None:
    classifier = build_network({k: v for k, v in architecture().items() if k != "decoder_channels"})
    assert isinstance(classifier, Classifier)
    torch.save(classifier.state_dict(), tmp_path / "weights.pt")
    segmenter = build_network(architecture())
    assert isinstance(segmenter, Segmenter)
    report = load_matching_weights(segmenter, tmp_path / "weights.pt", [str(i) for i in range(5)])
    assert report.backbone_matched and all(k.startswith("backbone.") for k in report.matched)
    for key, value in classifier.backbone.state_dict().items():
        assert torch.equal(segmenter.backbone.state_dict()[key], value), key


def test_decoder_widths_must_match_the_stages_and_a_backbone_without_stages_is_named() -> None:
    with pytest.raises(UsageError, match="decoder_channels has 3 widths but the backbone has 3 stages: give 2"):
        build_network(architecture(decoder_channels=[64, 32, 16]))
    with pytest.raises(UsageError, match="Linear gives no stages"):
        stage_channels(torch.nn.Linear(4, 4))


def test_torch_export_and_tracing_keep_the_maps() -> None:
    net = build_network(architecture()).eval()
    example = torch.randint(0, 256, (2, 1, 48, 48), dtype=torch.uint8)
    program = torch.export.export(net, (example,), dynamic_shapes=({0: torch.export.Dim("batch", min=1)},))
    traced = torch.jit.trace(net, example)
    with torch.no_grad():
        assert torch.allclose(program.module()(example), net(example), atol=1e-5)
        assert torch.allclose(traced(example[:1]), net(example[:1]), atol=1e-5)
