"""Sliding windows (litstarter._engine.tiles): where the windows go, the blend that equals the whole image's logits for
a network whose receptive field is under half the overlap (NumPy, as infer and serve run it, and torch, as the task
does), and the merge that finds an object straddling a seam once."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from litstarter._engine import tiles
from litstarter._engine.tiles import Tiling
from litstarter.errors import UsageError
from litstarter.models.tiling import run_tiled


class KnownField(nn.Module):
    """Three 5x5 convolutions (zero padding, stride 1): each output pixel sees 13 x 13 input pixels."""

    field = 13

    def __init__(self, channels: int = 1, classes: int = 3) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(
            nn.Conv2d(channels, 8, 5, padding=2), nn.ReLU(), nn.Conv2d(8, 8, 5, padding=2), nn.ReLU(),
            nn.Conv2d(8, classes, 5, padding=2),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body((x.float() - 127.5) / 64)


def numpy_run(net: nn.Module):
    """The network as infer's backends run it: NumPy windows in, NumPy logits out."""

    def run(windows: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return net(torch.from_numpy(np.ascontiguousarray(windows))).numpy()

    return run


def test_windows_start_every_stride_and_the_last_is_flush_with_the_end() -> None:
    assert tiles.starts(256, 64, 32) == [0, 32, 64, 96, 128, 160, 192]
    assert tiles.starts(250, 64, 16) == [0, 48, 96, 144, 186]
    assert tiles.starts(64, 64, 16) == [0] and tiles.starts(40, 64, 16) == [0]
    assert tiles.positions(100, 70, Tiling((64, 64), 16)) == [(0, 0), (0, 6), (36, 0), (36, 6)]


def test_every_pixel_keeps_a_positive_weight_and_inner_edges_weigh_nothing() -> None:
    for length, side, overlap in [(256, 64, 32), (250, 64, 16), (1000, 256, 64), (300, 100, 3), (97, 32, 0)]:
        total = np.zeros(length)
        for start in tiles.starts(length, side, overlap):
            weights = tiles.axis_weights(start, side, length, overlap)
            total[start : start + side] += weights
            q = overlap // 4
            if start > 0:
                assert (weights[:q] == 0).all() and weights[q] > 0
            if start + side < length:
                assert (weights[side - q :] == 0).all()
        assert (total > 0).all(), (length, side, overlap)


@pytest.mark.parametrize("shape", [(256, 256), (250, 200), (64, 300)], ids=["4x", "odd", "strip"])
def test_tiled_logits_equal_the_whole_image_logits(shape) -> None:
    """A network whose receptive field (13 px) is under half the overlap (32 px): blended windows of 64 px give the
    whole image's logits to 1e-4, through infer's NumPy path and the task's torch path alike."""
    net = KnownField().eval()
    tiling = Tiling((64, 64), 32)
    assert net.field < tiling.overlap / 2
    image = np.random.default_rng(1).integers(0, 256, (1, *shape), dtype=np.uint8)
    with torch.no_grad():
        whole = net(torch.from_numpy(image)[None])[0].numpy()
        tiled = tiles.predict(image, tiling, "blend", numpy_run(net), batch=5)
        on_torch = run_tiled(net, torch.from_numpy(image)[None], tiling, "blend")[0].numpy()
    assert tiled.shape == whole.shape == on_torch.shape
    assert np.abs(tiled - whole).max() <= 1e-4
    assert np.abs(on_torch - whole).max() <= 1e-4


def test_an_image_smaller_than_a_window_is_padded_and_cut_back() -> None:
    """Padded with 0 at its end to the window (its last rows then see the padding, as no whole-image pass would)."""
    net = KnownField().eval()
    image = np.random.default_rng(1).integers(0, 256, (1, 40, 90), dtype=np.uint8)
    tiled = tiles.predict(image, Tiling((64, 64), 32), "blend", numpy_run(net))
    with torch.no_grad():
        whole = net(torch.from_numpy(image)[None])[0].numpy()
    assert tiled.shape == (3, 40, 90)
    assert np.abs(tiled - whole)[:, : 40 - KnownField.field // 2].max() <= 1e-4


def test_a_uniform_average_would_not_equal_the_whole_image(monkeypatch) -> None:
    """The test above has teeth: without the zero band at the inner edges the windows' edge logits mix in."""
    net = KnownField().eval()
    image = np.random.default_rng(1).integers(0, 256, (1, 256, 256), dtype=np.uint8)
    with torch.no_grad():
        whole = net(torch.from_numpy(image)[None])[0].numpy()
    monkeypatch.setattr(tiles, "axis_weights", lambda start, side, length, overlap: np.ones(side))
    tiled = tiles.predict(image, Tiling((64, 64), 32), "blend", numpy_run(net))
    assert np.abs(tiled - whole).max() > 1e-2


OBJECTS = np.array(
    [
        [120, 40, 150, 70, 0],  # straddles the seam at x = 128 (window 0's right edge), whole in the window at 96
        [300, 185, 325, 215, 1],  # straddles y = 192
        [185, 280, 215, 310, 0],  # straddles x = 192 and lies inside the overlap band
        [215, 215, 245, 245, 1],  # at a corner of four windows
        [10, 10, 40, 40, 0],  # inside one window alone
    ],
    dtype=np.float64,
)


def visible_parts(windows_at: list[tuple[int, int]], side: int):
    """A detector that, in every window, finds the part of each object it shows, clipped to the window (as a
    detector clips its boxes to its input), scored 0.9: what a real one does at a seam."""

    def run(windows: np.ndarray, where=iter(windows_at)) -> np.ndarray:
        out = np.zeros((len(windows), 10, 6))
        out[:, :, 5] = -1
        for row in out:
            top, left = next(where)
            for i, (x1, y1, x2, y2, label) in enumerate(OBJECTS):
                box = np.clip([x1 - left, y1 - top, x2 - left, y2 - top], 0, side)
                if box[2] - box[0] > 0 and box[3] - box[1] > 0:
                    row[i] = [*box, 0.9, label]
        return out

    return run


def test_an_object_straddling_a_seam_is_found_once_not_twice() -> None:
    """An image 4x the window (512 px, windows of 128 overlapping by 32): each object is found once, as its whole
    box, though the windows either side of a seam both see it (one cut, one whole). Boxes just concatenated, it
    would be found two to four times; plain NMS at IoU 0.5 would keep the cut slivers too."""
    tiling = Tiling((128, 128), 32)
    image = np.zeros((1, 512, 512), dtype=np.uint8)
    where = tiles.positions(512, 512, tiling)
    found = tiles.predict(image, tiling, "boxes", visible_parts(where, 128), batch=7, nms_iou=0.5)
    assert len(found) == len(OBJECTS)
    matched = sorted(map(tuple, found[:, [0, 1, 2, 3, 5]].tolist()))
    assert matched == sorted(map(tuple, OBJECTS.tolist()))
    raw = visible_parts(where, 128)(tiles.windows(image, where, tiling))
    assert (raw[:, :, 5] >= 0).sum() > 2 * len(OBJECTS)  # what the merge had to undo


def test_two_objects_side_by_side_across_a_seam_stay_two() -> None:
    """Cut boxes are dropped only for a box of their class that covers them: a neighbour of another class, or one
    barely touching, stays."""
    merge = tiles.BoxMerge(256, 256, Tiling((128, 128), 32), nms_iou=0.5)
    merge.add(np.array([[[100, 10, 128, 40, 0.9, 0]], [[4, 10, 30, 40, 0.8, 1]]]), [(0, 0), (0, 96)])
    assert len(merge.result()) == 2


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"size": 8}, "at least 16 px"),
        ({"size": 256, "overlap": 200}, "data.tiles.overlap must be 0 to half"),
        ({"size": [256]}, "data.tiles.size must be a side"),
        ({"size": 256, "max_side": 100}, "data.tiles.max_side must be at least"),
    ],
)
def test_a_tiling_out_of_range_is_one_line_naming_its_key(value, message) -> None:
    with pytest.raises(UsageError, match=message) as refused:
        Tiling.from_value(value)
    assert "\n" not in str(refused.value)


def test_a_tiling_from_a_side_or_a_mapping() -> None:
    assert Tiling.from_value(256) == Tiling((256, 256), 64, tiles.MAX_SIDE)
    assert Tiling.from_value({"size": [128, 192], "overlap": 16}).to_dict() == {
        "size": [128, 192],
        "overlap": 16,
        "max_side": tiles.MAX_SIDE,
    }
    assert Tiling.from_value(None) is None
    assert tiles.own_size(5000, 2500, 4096) == (2048, 4096) and tiles.own_size(640, 480, 4096) == (480, 640)
