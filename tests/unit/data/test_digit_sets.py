"""The multi-label example's data: canvases of 1 to 3 digits apart, the set of digits drawn as the labels."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
import torch
from PIL import Image

from litstarter.data import DigitSetsDataModule
from litstarter.data.digit_sets import CLASS_NAMES, GAP, LARGEST, SIDE, SMALLEST, digit_sets
from litstarter.errors import UsageError
from litstarter.tasks.multilabel import MultilabelClassifier

COUNT = 300


@pytest.fixture(scope="module")
def drawn() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    return digit_sets(COUNT, seed=3)


def test_shapes_dtypes_and_label_sets_of_one_to_three_different_digits(drawn) -> None:
    images, labels, squares = drawn
    assert images.shape == (COUNT, 1, SIDE, SIDE) and images.dtype == np.uint8
    assert labels.shape == (COUNT, 10) and labels.dtype == np.float32 and set(np.unique(labels)) == {0.0, 1.0}
    per_image = labels.sum(axis=1)
    assert per_image.min() == 1 and per_image.max() == 3
    assert {1, 2, 3} == set(per_image.astype(int).tolist())  # every count occurs
    assert (labels.sum(axis=0) > 0).all()  # every digit occurs
    for row, rows in zip(labels, squares, strict=True):
        assert rows.shape == (row.sum(), 5)
        assert sorted(rows[:, 4].astype(int).tolist()) == np.flatnonzero(row).tolist()  # the digits drawn, once each


def test_squares_lie_on_the_canvas_at_12_to_18_px_and_never_overlap(drawn) -> None:
    _, _, squares = drawn
    for rows in squares:
        sides = rows[:, 2] - rows[:, 0]
        assert np.array_equal(sides, rows[:, 3] - rows[:, 1])
        assert ((SMALLEST <= sides) & (sides <= LARGEST)).all()
        assert (rows[:, :2] >= 0).all() and (rows[:, 2:4] <= SIDE).all()
        for a, b in combinations(rows.tolist(), 2):
            apart_x = a[2] + GAP <= b[0] or b[2] + GAP <= a[0]
            apart_y = a[3] + GAP <= b[1] or b[3] + GAP <= a[1]
            assert apart_x or apart_y, (a, b)


def test_the_ink_is_the_labelled_digits_and_nothing_else(drawn) -> None:
    """Outside the squares only the faint noise; inside each, a glyph that the nearest of scikit-learn's digits
    (the square shrunk back to 8x8) reads as the square's label."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    references = (digits.images.reshape(len(digits.images), 64) * (255 / 16)).astype(np.float32)
    images, _, squares = drawn
    right = total = 0
    for image, rows in zip(images[:, 0], squares, strict=True):
        outside = np.ones_like(image, dtype=bool)
        for x1, y1, x2, y2, digit in rows.astype(int).tolist():
            outside[y1:y2, x1:x2] = False
            patch = image[y1:y2, x1:x2]
            assert patch.max() > 150  # a digit's ink, far above the noise
            small = np.asarray(Image.fromarray(patch).resize((8, 8), Image.Resampling.BOX), dtype=np.float32)
            nearest = np.argmin(((references - small.reshape(1, 64)) ** 2).sum(axis=1))
            right += int(digits.target[nearest] == digit)
            total += 1
        assert image[outside].max() < 24  # the noise alone
    assert right / total > 0.98, right / total


def test_the_same_seed_gives_the_same_canvases_and_another_seed_others(drawn) -> None:
    images, labels, squares = digit_sets(COUNT, seed=3)
    assert np.array_equal(images, drawn[0]) and np.array_equal(labels, drawn[1])
    assert all(np.array_equal(a, b) for a, b in zip(squares, drawn[2], strict=True))
    other = digit_sets(COUNT, seed=4)
    assert not np.array_equal(other[0], images) and not np.array_equal(other[1], labels)


def test_at_most_max_digits_and_four_still_fit_apart() -> None:
    _, labels, squares = digit_sets(200, seed=0, most=4)
    assert labels.sum(axis=1).max() == 4
    _, labels, _ = digit_sets(50, seed=0, most=1)
    assert (labels.sum(axis=1) == 1).all()


def test_the_module_splits_70_15_15_in_order_and_serves_label_sets() -> None:
    dm = DigitSetsDataModule(size=200, num_workers=0, seed=5)
    assert dm.target_kind == MultilabelClassifier.target_kind == "label_set"
    assert dm.class_names == CLASS_NAMES == [str(d) for d in range(10)] and dm.num_classes == 10
    assert dm.channels == 1 and dm.image_size == (SIDE, SIDE)
    dm.setup()
    images, labels, _ = digit_sets(200, seed=5, most=3)
    splits = {"train": dm.train_set, "val": dm.val_set, "test": dm.test_set}
    assert {k: len(v) for k, v in splits.items()} == {"train": 140, "val": 30, "test": 30}
    assert np.array_equal(np.concatenate([s.images for s in splits.values()]), images)
    assert np.array_equal(np.concatenate([s.targets for s in splits.values()]), labels)
    assert np.array_equal(dm.class_counts(), labels[:140].sum(axis=0).astype(np.int64))
    x, y = next(iter(dm.val_dataloader()))
    assert x.dtype == torch.uint8 and x.shape == (30, 1, SIDE, SIDE)
    assert torch.equal(x, torch.from_numpy(images[140:170]))
    assert y.dtype == torch.float32 and torch.equal(y, torch.from_numpy(labels[140:170]))
    mean, std = dm.normalization()
    assert len(mean) == len(std) == 1 and 0 < mean[0] < 1 and std[0] > 0


def test_the_training_augmentation_keeps_every_digit_on_the_canvas() -> None:
    """No crop and no flip: the augmented canvas is the canvas, its grey levels jittered (a crop could cut a digit
    away and leave its label wrong)."""
    dm = DigitSetsDataModule(size=100, num_workers=0, seed=1)
    dm.setup()
    x, y = next(iter(dm.train_dataloader()))
    assert dm.augmentation.crop_scale is None and dm.augmentation.hflip == 0  # built by its first use
    assert x.dtype == torch.uint8 and x.shape == (64, 1, SIDE, SIDE) and y.shape == (64, 10)
    for i, (image, target) in enumerate(dm.train_set.__getitems__([(i, 1000 + i) for i in range(20)])):
        assert torch.equal(target, torch.from_numpy(dm.train_set.targets[i]))
        original = dm.train_set.images[i].astype(np.float32).flatten()
        correlation = np.corrcoef(image.float().flatten().numpy(), original)[0, 1]  # grey levels moved, not pixels
        assert correlation > 0.95, correlation


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"size": 10}, "data.size must be >= 20"), ({"max_digits": 5}, "data.max_digits")]
)
def test_bad_arguments_are_refused_in_one_line(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        DigitSetsDataModule(num_workers=0, **kwargs)
