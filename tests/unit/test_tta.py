"""Test-time views: the same on torch tensors and NumPy arrays, averaged in probability, unknown views refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from litstarter.errors import UsageError
from litstarter.tta import check_tta, tta_logits, views


def test_views_are_the_same_on_torch_and_numpy_and_keep_the_size() -> None:
    images = torch.randint(0, 256, (2, 3, 16, 12), dtype=torch.uint8)
    torch_views, numpy_views = views(images, ["hflip", "crops"]), views(images.numpy(), ["hflip", "crops"])
    assert len(torch_views) == 10  # the image and four shifted crops, each also flipped
    for t, n in zip(torch_views, numpy_views, strict=True):
        assert t.shape == images.shape
        np.testing.assert_array_equal(t.numpy(), n)
    torch.testing.assert_close(torch_views[5].float(), images.flip(-1).float())


def test_tta_logits_are_the_log_of_the_mean_probability() -> None:
    weight = torch.randn(4, 3 * 16 * 12)
    net = lambda x: x.float().flatten(1) @ weight.T / 500  # noqa: E731  (sees flips)
    images = torch.randint(0, 256, (2, 3, 16, 12), dtype=torch.uint8)
    got = tta_logits(net, images, ["hflip"])
    expected = (net(images).softmax(-1) + net(images.flip(-1)).softmax(-1)) / 2
    torch.testing.assert_close(got.exp(), expected)
    from_numpy = tta_logits(lambda x: net(torch.from_numpy(x)).numpy(), images.numpy(), ["hflip"])
    np.testing.assert_allclose(from_numpy, got.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(UsageError, match="model.tta: unknown view 'vflip'"):
        check_tta(["hflip", "vflip"])
