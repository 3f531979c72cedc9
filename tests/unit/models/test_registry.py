"""Every registered backbone, automatically: forward/backward at 1 and 3 channels (ONNX export: in
tests/e2e/test_backbone_export.py); and the ``weights`` setting (names, files, the offline error, stem adaptation).
Nothing downloads."""

from __future__ import annotations

import logging
import re
import urllib.error
from pathlib import Path

import pytest
import torch
import torchvision

from litstarter._engine.pretrained import adapt_stem_weight
from litstarter.errors import UsageError
from litstarter.models import create_backbone, list_backbones, list_weights
from litstarter.models.torchvision_backbones import FAMILIES

# The smallest input every family accepts: five stride-2 stages leave 1x1 (and BN still sees batch 2 > 1 value).
SIZE = 32
BATCH = 2


def test_registry_holds_the_torchvision_families() -> None:
    assert set(FAMILIES) | {"small_cnn"} == set(list_backbones())


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("name", list_backbones())
def test_backbone_forward_backward_finite(name: str, channels: int) -> None:
    torch.manual_seed(0)
    backbone = create_backbone(name, in_channels=channels)
    features = backbone(torch.randn(BATCH, channels, SIZE, SIZE))
    assert features.shape == (BATCH, backbone.num_features)
    assert torch.isfinite(features).all()
    features.square().mean().backward()
    grads = [p.grad for p in backbone.parameters() if p.requires_grad]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)


def test_unknown_weights_name_lists_the_valid_ones() -> None:
    assert list_weights("resnet50") == ["IMAGENET1K_V1", "IMAGENET1K_V2", "DEFAULT"]
    with pytest.raises(ValueError, match=r"unknown weights 'IMAGENET1K_V9'.*\['IMAGENET1K_V1', 'DEFAULT'\]"):
        create_backbone("resnet18", weights="IMAGENET1K_V9")
    with pytest.raises(ValueError, match="'small_cnn' has no pretrained weights.*init_from"):
        create_backbone("small_cnn", weights="IMAGENET1K_V1")


@pytest.fixture
def offline_hub(tmp_path: Path, monkeypatch) -> Path:
    """An empty torch hub under tmp_path whose downloads fail at once, as on a machine without network."""

    def no_network(url, *args, **kwargs):
        raise urllib.error.URLError("network unreachable (test)")

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setattr(torch.hub, "download_url_to_file", no_network)
    return tmp_path / "torch" / "hub" / "checkpoints"


def test_offline_weights_error_says_which_file_where_and_the_alternative(offline_hub: Path) -> None:
    with pytest.raises(RuntimeError) as info:
        create_backbone("mobilenet_v3_small", weights="IMAGENET1K_V1")
    message = str(info.value)
    assert "mobilenet_v3_small-047dcff4.pth" in message  # the file torchvision looks for
    assert str(offline_hub) in message  # where to put it
    assert "model.weights: /path/to/mobilenet_v3_small-047dcff4.pth" in message  # or point at a local file


def test_weights_name_uses_the_file_in_the_hub_and_sums_rgb_filters_for_grayscale(offline_hub: Path, caplog) -> None:
    torch.manual_seed(0)
    reference = torchvision.models.mobilenet_v3_small().state_dict()  # stands in for the ImageNet file
    offline_hub.mkdir(parents=True)
    url = torchvision.models.get_model_weights("mobilenet_v3_small")["IMAGENET1K_V1"].url
    torch.save(reference, offline_hub / url.rsplit("/", 1)[1])  # the file torchvision downloads
    with caplog.at_level(logging.INFO, logger="litstarter"):
        backbone = create_backbone("mobilenet_v3_small", in_channels=1, weights="DEFAULT")
    state = backbone.state_dict()
    assert torch.equal(state["features.0.0.weight"], reference["features.0.0.weight"].sum(dim=1, keepdim=True))
    assert torch.equal(state["features.12.1.running_var"], reference["features.12.1.running_var"])
    assert torch.equal(state["classifier.0.weight"], reference["classifier.0.weight"])  # the hidden layer stays
    assert "classifier.3.weight" not in state  # the ImageNet layer is gone
    assert any("summing the RGB filters" in r.getMessage() for r in caplog.records)


def test_weights_file_loads_and_adapts_other_channel_counts(tmp_path: Path) -> None:
    torch.manual_seed(0)
    reference = torchvision.models.resnet18().state_dict()
    path = tmp_path / "resnet18-mine.pth"
    torch.save(reference, path)
    backbone = create_backbone("resnet18", in_channels=4, weights=str(path))
    stem = backbone.state_dict()["conv1.weight"]
    rgb = reference["conv1.weight"]
    assert torch.allclose(stem, torch.cat([rgb, rgb[:, :1]], dim=1) * 0.75)
    assert torch.equal(adapt_stem_weight(rgb, 4), stem)
    assert torch.equal(backbone.state_dict()["layer4.1.bn2.weight"], reference["layer4.1.bn2.weight"])
    # a grey image replicated into RGB gives the RGB stem's response with the summed filters
    grey = torch.randn(1, 1, 7, 7)
    conv = torch.nn.functional.conv2d
    assert torch.allclose(conv(grey.expand(1, 3, 7, 7), rgb), conv(grey, adapt_stem_weight(rgb, 1)), atol=1e-5)


def test_weights_file_with_a_wrongly_shaped_tensor_names_it(tmp_path: Path) -> None:
    state = torchvision.models.resnet18().state_dict()
    state["layer1.0.bn1.weight"] = torch.ones(5)  # 64 in resnet18
    path = tmp_path / "resnet18.pth"
    torch.save(state, path)
    with pytest.raises(ValueError, match=r"shape mismatch \['layer1.0.bn1.weight: file \(5,\) vs model \(64,\)'\]"):
        create_backbone("resnet18", weights=str(path))


def test_weights_file_of_another_architecture_or_a_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    other = tmp_path / "resnet18.pth"
    torch.save(torchvision.models.resnet18().state_dict(), other)
    with pytest.raises(ValueError, match=r"resnet18.pth does not fit mobilenet_v3_small: missing \['features"):
        create_backbone("mobilenet_v3_small", weights=str(other))
    checkpoint = tmp_path / "run.ckpt"
    torch.save({"state_dict": {"net.head.weight": torch.zeros(2, 2)}, "epoch": 1}, checkpoint)
    with pytest.raises(ValueError, match="training checkpoint.*model.init_from"):
        create_backbone("resnet18", weights=str(checkpoint))
    with pytest.raises(UsageError, match="missing.pth"):
        create_backbone("resnet18", weights=str(tmp_path / "missing.pth"))


@pytest.mark.parametrize(
    ("name", "kwargs", "says"),
    [
        ("resnet18", {"global_pool": "catavgmax"}, "resnet18 takes no global_pool (it takes: none)"),
        ("small_cnn", {"pool": "max"}, "small_cnn takes no pool (it takes: global_pool, standardize, stem, widths)"),
    ],
)
def test_a_backbone_argument_the_factory_lacks_is_one_line_naming_it(name: str, kwargs: dict, says: str) -> None:
    with pytest.raises(UsageError, match=re.escape(f"model.backbone_kwargs: {says}")):
        create_backbone(name, in_channels=3, **kwargs)
