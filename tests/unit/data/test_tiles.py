"""data.tiles: images and masks (or boxes) cached at their own size, training crops of a window drawn from the memory
map (foreground-centred a third of the time for masks, boxes cut by the crop's rule), whole images for val and test,
and the line ``image_size: auto`` writes when it would shrink a pixel task's images more than 2x."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from litstarter._engine.images.sizes import shrink_note
from litstarter.data import ImageFolderDataModule
from litstarter.data.tiles import FOREGROUND, TiledImageDataset, crops_per_image, shifted
from litstarter.errors import UsageError
from tests.helpers import make_image_folder

#: (width, height) of each image of the mask folder: mixed sizes, one larger than max_side below.
SIZES = [(100, 80), (60, 120), (90, 90), (70, 64), (96, 72), (80, 100), (64, 64), (300, 40)]


def write_masks(root: Path) -> Path:
    """``root/{images,masks}``: grey images of :data:`SIZES`, each mask a thin vertical line of class 1 (a few px of
    the image) on class 0."""
    rng = np.random.default_rng(0)
    for i, (w, h) in enumerate(SIZES):
        for kind in ("images", "masks"):
            (root / kind).mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (h, w), dtype=np.uint8)).save(root / "images" / f"{i}.png")
        mask = np.zeros((h, w), dtype=np.uint8)
        mask[:, w // 3] = 1
        Image.fromarray(mask).save(root / "masks" / f"{i}.png")
    (root / "classes.txt").write_text("background\nline\n")
    return root


def tiled_module(root: Path, tmp_path: Path, **kwargs) -> ImageFolderDataModule:
    options = {"num_workers": 0, "batch_size": 4, "val_fraction": 0.25, "test_fraction": 0.25, "augmentation": None}
    dm = ImageFolderDataModule(
        str(root), cache_dir=str(tmp_path / "cache"), tiles={"size": 32, "overlap": 8, "max_side": 200}, **{
            **options, **kwargs}
    )  # fmt: skip
    dm.prepare_data()
    dm.setup("fit")
    return dm


def test_images_and_masks_are_cached_at_their_own_size_padded_to_the_largest(tmp_path: Path) -> None:
    root = write_masks(tmp_path / "set")
    dm = tiled_module(root, tmp_path)
    assert dm.image_size == (32, 32) and dm.tiling.overlap == 8
    assert dm.resize_size == (120, 200)  # the 300 x 40 image is kept at 200 x 27 (max_side 200)
    cache = dm.load_cache()
    for split in cache.splits:
        images, masks, extents = cache.images(split), cache.targets(split), cache.extents(split)
        for i, record in enumerate(cache.files(split)):
            h, w = extents[i]
            source = np.asarray(Image.open(root / record["path"]))
            if source.shape[1] <= 200:
                assert (h, w) == source.shape and (images[i, 0, :h, :w] == source).all()
            else:
                assert (h, w) == (27, 200)
            assert (images[i, :, h:, :] == 0).all() and (masks[i, h:, :] == 255).all()  # padding: ignored
            assert (masks[i, :h, :w] < 2).all()


def test_training_draws_window_crops_from_the_seed_within_each_image(tmp_path: Path) -> None:
    dm = tiled_module(write_masks(tmp_path / "set"), tmp_path)
    train = dm.train_set
    assert len(train) == crops_per_image(train.extents, (32, 32)).sum()
    items = [(k, 1000 + k) for k in range(len(train))]
    first, again = train.__getitems__(items), train.__getitems__(items)
    for (image, mask), (image2, mask2) in zip(first, again, strict=True):
        assert image.shape == (1, 32, 32) and mask.shape == (32, 32) and image.dtype == torch.uint8
        assert torch.equal(image, image2) and torch.equal(mask, mask2)  # a function of the seed alone
    held = [bool((mask == 1).any()) for _, mask in train.__getitems__([(k % len(train), s) for k, s in
                                                                       enumerate(range(600))])]  # fmt: skip
    assert np.mean(held) >= FOREGROUND  # a thin line of a few % of the pixels, in at least a third of the crops
    for k, seed in items:
        index, top, left, _ = train._crop(int(train.owner[k]), seed)
        h, w = train.extents[index]
        assert 0 <= top <= max(0, h - 32) and 0 <= left <= max(0, w - 32)


def test_val_and_test_serve_whole_images_in_batches_of_a_training_batchs_pixels(tmp_path: Path) -> None:
    dm = tiled_module(write_masks(tmp_path / "set"), tmp_path, batch_size=24)
    images, masks = next(iter(dm.val_dataloader()))
    assert images.shape[-2:] == (120, 200) and masks.shape[-2:] == (120, 200)
    assert dm.val_set.loader_batch == max(1, 24 * 32 * 32 // (120 * 200))
    views, _ = dm.val_set.eval_view([0])  # what an export of one window is verified on: the centre window
    assert views.shape[-2:] == (32, 32)


def test_boxes_are_shifted_into_the_crop_and_clipped_to_it() -> None:
    rows = np.array([[10, 10, 30, 30, 0], [40, 5, 60, 20, 1], [0, 0, 5, 5, 2]], dtype=np.float32)
    out = shifted(rows, top=8, left=20, size=(32, 32))
    assert out.tolist() == [[0, 2, 10, 22, 0], [20, 0, 32, 12, 1]]  # the third left the crop


def test_a_boxes_folder_trains_on_crops_holding_their_boxes(tmp_path: Path) -> None:
    root = tmp_path / "boxes"
    (root / "images").mkdir(parents=True)
    lines = ["path,x1,y1,x2,y2,label"]
    for i in range(8):
        Image.fromarray(np.random.default_rng(i).integers(0, 256, (64, 96), dtype=np.uint8)).save(
            root / "images" / f"{i}.png"
        )
        lines.append(f"images/{i}.png,{10 + i},{12},{40 + i},{30},{'ab'[i % 2]}")
    (root / "boxes.csv").write_text("\n".join(lines) + "\n")
    dm = tiled_module(root, tmp_path, labels="boxes.csv")
    crops = dm.train_set.__getitems__([(k, k) for k in range(len(dm.train_set))])
    for image, target in crops:
        assert image.shape == (1, 32, 32)
        boxes = target["boxes"]
        assert ((boxes >= 0) & (boxes <= 32)).all() and (boxes[:, 2] > boxes[:, 0]).all()
    images, targets = next(iter(dm.val_dataloader()))
    assert images.shape[-2:] == (64, 96) and len(targets[0]["boxes"]) == 1  # whole images, their boxes as stored


def test_tiles_are_refused_for_class_targets_in_one_line(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "classes", {"a": 4, "b": 4})
    with pytest.raises(UsageError, match="data.tiles trains on windows of images whose targets are masks or boxes"):
        ImageFolderDataModule(str(root), cache_dir=str(tmp_path / "cache"), tiles={"size": 32})


def test_auto_says_when_it_would_shrink_a_pixel_tasks_images_more_than_2x() -> None:
    assert shrink_note([(400, 300)] * 5, 224) is None  # 1.3x: nothing to say
    note = shrink_note([(1024, 768)] * 5, 224)
    assert note.startswith("data.image_size: auto -> 224 shrinks these images 3.4x (median short side 768 px)")
    assert "--data.tiles.size 384" in note and "\n" not in note


def large_masks(root: Path) -> Path:
    """4 images of 600x520 px with a diagonal line of class 255 (read as binary masks)."""
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()
    for i in range(4):
        Image.new("L", (600, 520), i).save(root / "images" / f"{i}.png")
        Image.fromarray(np.eye(520, 600, dtype=np.uint8) * 255).save(root / "masks" / f"{i}.png")
    return root


def test_masks_auto_would_shrink_more_than_2x_train_on_windows_by_default_said_once(tmp_path: Path, caplog) -> None:
    root = large_masks(tmp_path / "large")
    options = {"image_size": "auto", "val_fraction": 0.25, "test_fraction": 0.25}
    with caplog.at_level(logging.INFO):
        dm = ImageFolderDataModule(str(root), cache_dir=str(tmp_path / "cache"), **options)
    assert (dm.tiling.size, dm.tiling.overlap) == ((256, 256), 64)  # half the 520 px short side, a multiple of 32
    assert dm.image_size == (256, 256) and dm.resize_size == (520, 600)  # stored at their own size
    said = [r.getMessage() for r in caplog.records]
    auto = [m for m in said if m.startswith("data.tiles: auto -> windows of 256 px")]
    assert len(auto) == 1 and "shrinks these images 2.3x" in auto[0] and "data.tiles: null" in auto[0], said
    assert len(said) == len(set(said)), said  # read twice, said once


def test_masks_with_tiles_null_are_shrunk_as_image_size_says(tmp_path: Path) -> None:
    root = large_masks(tmp_path / "large")
    options = {"image_size": "auto", "val_fraction": 0.25, "test_fraction": 0.25}
    dm = ImageFolderDataModule(str(root), cache_dir=str(tmp_path / "cache"), tiles=None, **options)
    assert dm.tiling is None and dm.image_size == (224, 224)


def test_a_tiled_dataset_without_extents_takes_every_image_whole() -> None:
    images = np.zeros((2, 1, 64, 64), dtype=np.uint8)
    masks = np.zeros((2, 64, 64), dtype=np.uint8)
    from litstarter._engine.tiles import Tiling

    data = TiledImageDataset(images, masks, Tiling((32, 32), 8), train=True)
    assert len(data) == 8 and data.extents.tolist() == [[64, 64], [64, 64]]
