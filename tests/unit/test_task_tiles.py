"""model.tiles in the tasks: ``self(images)`` on an image larger than a window slides the windows (the same code as
infer's), so the task's predict gives the whole image's logits for a network whose receptive field is under half the
overlap, and detection finds an object straddling a seam once; a window-sized batch (training's) is one plain pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from litstarter._engine import tiles
from litstarter.errors import UsageError
from litstarter.tasks import ImageClassifier, ObjectDetector, SemanticSegmenter
from tests.unit._engine.test_tiles import OBJECTS, KnownField, visible_parts

TILES = {"size": [64, 64], "overlap": 32, "max_side": 4096}


def segmenter() -> SemanticSegmenter:
    task = SemanticSegmenter(num_classes=3, in_channels=1, image_size=(64, 64), tiles=TILES)
    task.net = KnownField(channels=1, classes=3)  # receptive field 13 px < 32 / 2
    return task.eval()


def test_the_task_predicts_an_image_4x_the_window_as_the_whole_image() -> None:
    task = segmenter()
    image = torch.from_numpy(np.random.default_rng(2).integers(0, 256, (2, 1, 256, 256), dtype=np.uint8))
    with torch.no_grad():
        whole = task.net(image)
        tiled = task(image)
        classes = task.predict_step(image, 0)
    assert tiled.shape == whole.shape == (2, 3, 256, 256)
    assert (tiled - whole).abs().max() <= 1e-4
    assert torch.equal(classes, whole.argmax(dim=1))


def test_a_batch_of_one_window_is_one_plain_pass(monkeypatch) -> None:
    task = segmenter()
    monkeypatch.setattr(tiles, "predict", lambda *a, **k: pytest.fail("training's window-sized batch was tiled"))
    with torch.no_grad():
        out = task(torch.zeros((4, 1, 64, 64), dtype=torch.uint8))
    assert out.shape == (4, 3, 64, 64)


def test_the_detection_task_finds_an_object_straddling_a_seam_once() -> None:
    task = ObjectDetector(num_classes=2, in_channels=1, image_size=(128, 128), tiles={"size": 128, "overlap": 32})
    tiling = tiles.Tiling.from_value({"size": 128, "overlap": 32})
    fake = visible_parts(tiles.positions(512, 512, tiling), 128)

    class Found(torch.nn.Module):  # what FCOS gives in eval mode: (n, D, 6) rows per window
        def forward(self, windows: torch.Tensor) -> torch.Tensor:
            return torch.from_numpy(fake(windows.numpy())).float()

    task.net = Found()
    found = task.predict_step(torch.zeros((1, 1, 512, 512), dtype=torch.uint8), 0)[0]
    found = found[found[:, 5] >= 0]
    assert sorted(map(tuple, found[:, [0, 1, 2, 3, 5]].tolist())) == sorted(map(tuple, OBJECTS.tolist()))


def test_tiles_for_a_task_that_does_not_tile_is_one_line() -> None:
    with pytest.raises(UsageError, match="task 'single_label' does not tile") as refused:
        ImageClassifier(num_classes=2, tiles=TILES)
    assert "\n" not in str(refused.value)
