"""``timm/<name>`` backbones: the feature count a dummy forward measures, the one-line refusals (a size under the
model's minimum, a missing timm, an unknown name, an offline pretrained request), a local weights file through
timm's overlay, and the layer-decay parameter groups."""

from __future__ import annotations

import re
import sys
import time

import pytest
import torch

from litstarter import optim
from litstarter._engine.pretrained import WeightsUnavailableError
from litstarter.errors import UsageError
from litstarter.models import Classifier, check_weights, create_backbone
from litstarter.models.registry import BackboneError, is_class_path

timm = pytest.importorskip("timm")


def test_the_feature_count_is_what_the_model_outputs_not_its_num_features() -> None:
    backbone = create_backbone("timm/mobilenetv3_small_050", in_channels=1, image_size=(32, 32))
    assert backbone.num_features == backbone.model.head_hidden_size != backbone.model.num_features
    assert backbone(torch.zeros(2, 1, 32, 32)).shape == (2, backbone.num_features)


def test_a_size_under_the_minimum_is_refused_naming_the_minimum() -> None:
    with pytest.raises(BackboneError) as refused:
        create_backbone("timm/convnext_atto", in_channels=3, image_size=(16, 16))
    message = str(refused.value)
    match = re.search(r"needs an input of at least (\d+)x\1; data.image_size is \[16, 16\]", message)
    assert match and "\n" not in message, message
    side = int(match.group(1))
    assert create_backbone("timm/convnext_atto", in_channels=3, image_size=(side, side)).num_features > 0


def test_names_that_cannot_be_built_are_one_line(monkeypatch) -> None:
    assert not is_class_path("timm/convnext_nano.in12k")  # a dot in a timm name is its pretrained tag
    with pytest.raises(BackboneError, match="timm has no model 'resnet_nope'"):
        create_backbone("timm/resnet_nope")
    with pytest.raises(UsageError, match="unknown weights 'IMAGENET1K_V1'"):
        check_weights("timm/resnet18", "IMAGENET1K_V1")
    monkeypatch.setitem(sys.modules, "timm", None)  # as on a core install
    with pytest.raises(
        UsageError, match=re.escape("needs timm, which is not installed: pip install 'litstarter[timm]'")
    ):
        create_backbone("timm/resnet18")


def test_a_local_weights_file_loads_through_timm_with_the_head_dropped_and_the_stem_adapted(tmp_path) -> None:
    source = timm.create_model("resnet10t", num_classes=7)  # a head of its own, as a fine-tuned file has
    torch.save(source.state_dict(), tmp_path / "resnet10t.pth")
    backbone = create_backbone("timm/resnet10t", 1, weights=str(tmp_path / "resnet10t.pth"), image_size=(32, 32))
    loaded, expected = backbone.model.state_dict(), source.state_dict()
    stem = backbone.model.pretrained_cfg["first_conv"] + ".weight"
    assert torch.allclose(loaded[stem], expected[stem].sum(dim=1, keepdim=True))  # 3 -> 1 channel: RGB summed
    assert all(torch.equal(v, expected[k]) for k, v in loaded.items() if k != stem)
    assert "fc.weight" in expected and "fc.weight" not in loaded


def test_an_offline_pretrained_request_fails_in_one_line_within_seconds(tmp_path, monkeypatch) -> None:
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    start = time.monotonic()
    with pytest.raises(WeightsUnavailableError) as refused:
        create_backbone("timm/resnet10t", 3, weights="pretrained", image_size=(32, 32))
    assert time.monotonic() - start < 5
    assert "HF_HUB_OFFLINE" in str(refused.value) and "\n" not in str(refused.value)


def test_layer_decay_groups_scale_each_layer_below_the_head() -> None:
    net = Classifier(create_backbone("timm/resnet10t", 3, image_size=(32, 32)), 3, [0.5] * 3, [0.25] * 3)
    optimizer = torch.optim.AdamW(optim.layer_decay_groups(net, net.backbone, 0.5, True), lr=1e-2, weight_decay=0.05)
    line = optim.apply_lr_scales(optimizer)
    groups = optimizer.param_groups
    backbone = [g for g in groups if g["name"].startswith("backbone_layer_")]
    layers = {g["name"].removesuffix("_no_decay") for g in backbone}
    assert groups[0]["name"] == "backbone_layer_00" and groups[-1]["name"].startswith("head")
    assert groups[0]["lr"] == pytest.approx(1e-2 * 0.5 ** len(layers)) and groups[-1]["lr"] == 1e-2
    assert sorted(g["lr"] for g in backbone) == [g["lr"] for g in backbone]  # first layer first, slowest
    no_decay = [g for g in groups if g["name"].endswith("_no_decay")]
    assert no_decay and all(g["weight_decay"] == 0.0 and all(p.ndim == 1 for p in g["params"]) for g in no_decay)
    assert all(g["weight_decay"] == 0.05 for g in groups if not g["name"].endswith("_no_decay"))  # the optimiser's
    counted = sum(len(g["params"]) for g in groups)
    assert counted == len(list(net.parameters())) and line.count("(x") == 3


def test_layer_decay_without_layer_groups_is_one_line() -> None:
    net = Classifier(create_backbone("small_cnn", 1, image_size=(8, 8)), 3, [0.5], [0.25])
    with pytest.raises(UsageError, match="model.layer_decay needs a backbone that groups its parameters by layer"):
        optim.layer_decay_groups(net, net.backbone, 0.75, True)
    with pytest.raises(UsageError, match=r"model.layer_decay must be in \(0, 1\]"):
        optim.layer_decay_groups(net, net.backbone, 1.5, True)


def test_gradient_checkpointing_reaches_the_timm_model() -> None:
    net = Classifier(create_backbone("timm/resnet10t", 1, image_size=(32, 32)), 3, [0.5], [0.25])
    net.set_memory_options(gradient_checkpointing=True, channels_last=True)
    assert net.backbone.model.grad_checkpointing
    net(torch.randint(0, 256, (2, 1, 32, 32)).float()).sum().backward()
    assert net.backbone.model.conv1[0].weight.grad is not None
