"""The default backbone and the registry."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from litstarter.models import Classifier, create_backbone, list_backbones


@pytest.mark.parametrize("size", [8, 32])
@pytest.mark.parametrize("channels", [1, 3])
def test_small_cnn_shapes(size: int, channels: int) -> None:
    backbone = create_backbone("small_cnn", in_channels=channels)
    feats = backbone(torch.randn(2, channels, size, size))
    assert feats.shape == (2, backbone.num_features)


def test_kaiming_init_keeps_activation_scale() -> None:
    torch.manual_seed(0)
    backbone = create_backbone("small_cnn", in_channels=3)
    conv = next(m for m in backbone.modules() if isinstance(m, nn.Conv2d) and m.in_channels > 3)
    fan_out = conv.out_channels * conv.kernel_size[0] * conv.kernel_size[1]
    assert abs(conv.weight.std().item() - (2.0 / fan_out) ** 0.5) < 0.01


def test_registry_lists_and_rejects_unknown_names() -> None:
    assert "small_cnn" in list_backbones()
    with pytest.raises(ValueError, match="small_cnn"):
        create_backbone("no_such_net")


def test_classifier_normalises_inside() -> None:
    net = Classifier(create_backbone("small_cnn", in_channels=1), 3, mean=[0.5], std=[0.25]).eval()
    x = torch.full((1, 1, 8, 8), 127.5)
    assert torch.allclose(net.normalize(x), torch.zeros_like(x))
    assert torch.equal(net(x.to(torch.uint8)), net(x.to(torch.uint8).float()))


def test_classifier_normalization_round_trips_on_the_0_to_1_scale() -> None:
    net = Classifier(create_backbone("small_cnn", in_channels=3), num_classes=2, mean=[0.5] * 3, std=[0.25] * 3)
    net.set_normalization([0.1, 0.2, 0.3], [0.4, 0.5, 0.6])
    mean, std = net.normalization()
    assert mean == pytest.approx([0.1, 0.2, 0.3]) and std == pytest.approx([0.4, 0.5, 0.6])
    x = torch.full((1, 3, 2, 2), 0.2 * 255)
    assert net.normalize(x)[0, 1].abs().max() < 1e-5  # channel 1: (0.2 - 0.2) / 0.5


@pytest.mark.parametrize(
    ("size", "factor"), [((8, 8), 1), ((16, 16), 1), ((32, 32), 2), ((48, 40), 2), ((64, 64), 4), ((224, 96), 4)]
)
def test_stem_downsamples_images_above_16_px_and_keeps_the_digits_path(size: tuple[int, int], factor: int) -> None:
    backbone = create_backbone("small_cnn", in_channels=3, image_size=size, standardize=False)
    assert backbone.stem_factor == factor
    first_stage = backbone.stages[0]
    x = torch.randn(2, 3, *size)
    out = first_stage[1](first_stage[0](x))  # the stem and the stage's second conv, before its pooling
    assert out.shape[-2:] == (-(-size[0] // factor), -(-size[1] // factor))
    assert backbone(x).shape == (2, backbone.num_features)


def test_stem_is_part_of_the_architecture_so_a_rebuilt_network_computes_the_same() -> None:
    from litstarter.models.classifier import build_classifier

    arch = {"backbone": "small_cnn", "num_classes": 3, "in_channels": 3, "image_size": [64, 64]}
    torch.manual_seed(0)
    net = build_classifier(arch).eval()
    rebuilt = build_classifier(arch).eval()
    rebuilt.load_state_dict(net.state_dict())
    x = torch.rand(2, 3, 64, 64) * 255
    assert torch.equal(net(x), rebuilt(x))
    flat = build_classifier({**arch, "backbone_kwargs": {"stem": 1}}).eval()
    flat.load_state_dict(net.state_dict())  # same weight shapes: only the recorded size tells the two apart
    assert not torch.allclose(net(x), flat(x))


def test_stem_rejects_a_factor_it_does_not_have() -> None:
    with pytest.raises(ValueError, match="stem must be 1, 2, 4 or 'auto'; got 3"):
        create_backbone("small_cnn", in_channels=3, stem=3)


@pytest.mark.parametrize(
    ("size", "on"), [((8, 8), False), ((16, 16), False), ((17, 20), True), ((32, 32), True), ((64, 64), True)]
)
def test_standardize_auto_feeds_both_views_for_photo_sizes_only(size: tuple[int, int], on: bool) -> None:
    backbone = create_backbone("small_cnn", in_channels=3, image_size=size)
    assert backbone.standardize == ("both" if on else False)
    assert backbone.stages[0][0][0].in_channels == (6 if on else 3)  # raw and standardised channels side by side
    assert create_backbone("small_cnn", in_channels=3, image_size=size, standardize=False).standardize is False


def test_standardized_network_ignores_exposure_contrast_and_colour_cast_but_sees_shapes() -> None:
    """The same digit-like shape under another per-channel gain and offset (a darker, bluer, flatter photo of it)
    gives the same features; a different shape does not."""
    torch.manual_seed(0)
    backbone = create_backbone("small_cnn", in_channels=3, image_size=(64, 64), standardize=True).eval()
    shape = torch.zeros(1, 1, 64, 64)
    shape[..., 16:48, 28:36] = 1.0  # a bar
    photo = -1.0 + 2.0 * shape.expand(1, 3, 64, 64)  # dataset-normalised units
    relit = photo * torch.tensor([0.5, 0.8, 1.5]).view(1, 3, 1, 1) + torch.tensor([-0.3, 0.1, 0.4]).view(1, 3, 1, 1)
    other = -1.0 + 2.0 * shape.transpose(-1, -2).expand(1, 3, 64, 64)  # the bar turned sideways
    with torch.no_grad():
        f_photo, f_relit, f_other = backbone(photo), backbone(relit), backbone(other)
    assert torch.allclose(f_photo, f_relit, atol=5e-3 * f_photo.abs().max())
    assert not torch.allclose(f_photo, f_other, atol=1e-2 * f_photo.abs().max())
    plain = create_backbone("small_cnn", in_channels=3, image_size=(64, 64), standardize=False).eval()
    plain.load_state_dict(backbone.state_dict())  # no weights of its own: the flag alone changes the result
    with torch.no_grad():
        assert not torch.allclose(plain(photo), plain(relit), atol=1e-2 * f_photo.abs().max())


def test_max_pooling_keeps_a_small_pattern_that_the_average_dilutes() -> None:
    """The same feature map pooled three ways: one hot 2x2 patch in a 6x6 map is 1/9 of the average but all of the
    max, and ``catavgmax`` gives both side by side (twice the features)."""
    torch.manual_seed(0)
    widths = {}
    for pool in ("avg", "max", "catavgmax"):
        backbone = create_backbone("small_cnn", in_channels=3, image_size=(48, 48), global_pool=pool)
        widths[pool] = backbone.num_features
        assert backbone(torch.randn(2, 3, 48, 48)).shape == (2, backbone.num_features)
    assert widths["catavgmax"] == 2 * widths["avg"] == 2 * widths["max"]
    fmap = torch.zeros(1, 4, 6, 6)
    fmap[..., 2:4, 2:4] = 9.0
    avg, peak = (create_backbone("small_cnn", global_pool=p).pool(fmap).flatten() for p in ("avg", "max"))
    both = create_backbone("small_cnn", global_pool="catavgmax").pool(fmap).flatten()
    assert torch.allclose(avg, torch.ones(4)) and torch.allclose(peak, torch.full((4,), 9.0))
    assert torch.equal(both, torch.cat([avg, peak]))


def test_small_cnn_rejects_a_pooling_it_does_not_have() -> None:
    with pytest.raises(ValueError, match="small_cnn global_pool must be 'avg', 'max' or 'catavgmax'; got 'mean'"):
        create_backbone("small_cnn", global_pool="mean")
