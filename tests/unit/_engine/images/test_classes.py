"""``data.classes``: train on a subset of classes, relabelled 0..K-1 in the order given, on both data modules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from litstarter.data import DigitsDataModule, ImageFolderDataModule
from tests.helpers import make_image_folder

LEVELS = {"cat": 20, "dog": 120, "owl": 230}  # grey levels, far enough apart to tell the classes by pixels


def test_digits_subset_keeps_given_order_relabels_and_keeps_each_image_in_its_split() -> None:
    full = DigitsDataModule(num_workers=0).splits()
    dm = DigitsDataModule(num_workers=0, classes=[7, "5", 9])
    assert dm.class_names == ["7", "5", "9"] and dm.num_classes == 3
    for split, (images, labels) in dm.splits().items():
        assert set(labels.tolist()) == {0, 1, 2}
        full_images, full_labels = full[split]
        for new, digit in enumerate([7, 5, 9]):
            # exactly the images of that digit in that split of the full data, in the same order
            assert np.array_equal(images[labels == new], full_images[full_labels == digit])
        assert len(labels) == sum(int((full_labels == d).sum()) for d in (7, 5, 9))


@pytest.mark.parametrize(
    ("classes", "match"),
    [(["5", "x"], r"\['x'\].*expected names from \['0', '1'"), ([3, 3], "more than once"), ([4], "at least 2")],
)
def test_digits_subset_bad_names_are_errors(classes, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        DigitsDataModule(num_workers=0, classes=classes)


def test_image_folder_subset_relabels_and_caches_separately(tmp_path: Path) -> None:
    # Each class its own grey level, so labels can be checked from pixels.
    root = make_image_folder(tmp_path / "images", dict.fromkeys(LEVELS, 6), size=(10, 10), colours=LEVELS, noise=4)
    common = {"image_size": 8, "channels": 1, "num_workers": 0, "cache_dir": str(tmp_path / "cache")}
    common |= {"val_fraction": 0.2, "test_fraction": 0.2}
    full = ImageFolderDataModule(str(root), **common)
    subset = ImageFolderDataModule(str(root), classes=["owl", "cat"], **common)
    assert full.class_names == ["cat", "dog", "owl"]
    assert subset.class_names == ["owl", "cat"] and subset.num_classes == 2
    assert subset.folder.class_to_idx == {"owl": 0, "cat": 1}
    assert subset.folder.cache_folder() != full.folder.cache_folder()
    full.setup()
    subset.setup()
    for name in ("train_set", "val_set", "test_set"):
        kept = getattr(subset, name)
        levels = kept.eval_view(range(len(kept)))[0].mean(axis=(1, 2, 3))  # un-augmented (train would invert)
        labels = kept.targets
        assert set(labels.tolist()) == {0, 1}
        assert np.all(levels[labels == 0] >= 200) and np.all(levels[labels == 1] < 100)  # owl -> 0, cat -> 1
        all_of = getattr(full, name)
        assert len(kept) == int(np.isin(all_of.targets, [0, 2]).sum())  # same split membership as with all classes
    assert subset.class_counts().tolist() == [4, 4]


def test_image_folder_unknown_class_lists_the_folders(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "images", {"cat": 6, "dog": 6}, size=(10, 10), colours=LEVELS, noise=4)
    with pytest.raises(ValueError, match=r"\['cow'\] are not classes of data.root .*\['cat', 'dog'\]"):
        ImageFolderDataModule(str(root), classes=["cat", "cow"], cache_dir=str(tmp_path / "cache"))
