"""Boxes through the stream's collate: the same eval view as the array dataset's, and a training view whose boxes
move with their image and are seeded per sample."""

from __future__ import annotations

import numpy as np
import torch

from litstarter.data import ArrayImageDataset, FastAugmentation
from litstarter.data.digit_boxes import _ragged, digit_boxes
from litstarter.data.streaming_dataset import ImageBatch


def canvases() -> tuple[np.ndarray, list[np.ndarray]]:
    return digit_boxes(6, seed=2)


def test_the_streams_eval_view_of_boxes_is_the_array_datasets() -> None:
    images, boxes = canvases()
    dataset = ArrayImageDataset(images, _ragged(boxes), (48, 48))
    expected_images, expected = dataset.collate([dataset[i] for i in range(len(images))])
    got_images, got = ImageBatch((48, 48), boxes=True)([(images[i], boxes[i], i) for i in range(len(images))])
    assert torch.equal(got_images, expected_images)
    for mine, theirs in zip(got, expected, strict=True):
        assert torch.equal(mine["boxes"], theirs["boxes"]) and torch.equal(mine["labels"], theirs["labels"])


def test_the_streams_training_view_moves_boxes_with_their_image_and_repeats_by_seed() -> None:
    images, boxes = canvases()
    batch = ImageBatch((64, 64), FastAugmentation(hflip=True), boxes=True)
    items = [(images[i], boxes[i], 100 + i) for i in range(len(images))]
    first, again = batch(items), batch(items)
    assert torch.equal(first[0], again[0])
    for target, repeat, rows in zip(first[1], again[1], boxes, strict=True):
        assert torch.equal(target["boxes"], repeat["boxes"])
        assert len(target["boxes"]) <= len(rows) and ((target["boxes"] >= 0) & (target["boxes"] <= 64)).all()
        assert (target["boxes"][:, 2:] > target["boxes"][:, :2]).all() and target["labels"].dtype == torch.int64
