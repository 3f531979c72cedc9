"""Masks beside images: the layouts (folders, split folders, an image,mask CSV) give the same cache; the class names
and the palette; each mask through its image's geometry; and each bad mask refused in one line naming its file."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from litstarter.data import ImageFolderDataModule
from litstarter.errors import BadInputError
from tests.helpers import write_mask_folder


def module(root: Path, cache: Path, **options) -> ImageFolderDataModule:
    return ImageFolderDataModule(str(root), image_size=48, cache_dir=str(cache), num_workers=0, **options)


def cached(dm: ImageFolderDataModule) -> dict[str, tuple[list[str], np.ndarray]]:
    """Each split's files and masks as the cache holds them."""
    cache = dm.load_cache()
    return {s: (list(cache.column(s, "path")), np.asarray(cache.targets(s))) for s in cache.splits}


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """One 30-canvas pool three ways: ``flat`` (images/, masks/), ``splits`` (train/val/test), ``csv`` (a labels
    file of the split folders' files)."""
    tmp = tmp_path_factory.mktemp("masks")
    flat = write_mask_folder(tmp / "flat", 30)
    split = write_mask_folder(tmp / "splits", 30, splits=True)
    rows = ["image,mask,split"]
    for s in ("train", "val", "test"):
        for image in sorted((split / s / "images").iterdir()):
            rows.append(f"{s}/images/{image.name},{s}/masks/{image.stem}.png,{s}")
    (split / "pairs.csv").write_text("\n".join(rows) + "\n")
    return {"flat": flat, "splits": split, "tmp": tmp}


def test_masks_are_cached_through_their_images_geometry_with_the_classes_of_classes_txt(folders) -> None:
    dm = module(folders["flat"], folders["tmp"] / "c1")
    assert dm.target_kind == "mask" and dm.class_names[:2] == ["background", "0"] and dm.num_classes == 11
    splits = cached(dm)
    assert sum(len(paths) for paths, _ in splits.values()) == 30 and set(splits) == {"train", "val", "test"}
    for paths, masks in splits.values():
        assert masks.dtype == np.uint8 and masks.shape[1:] == tuple(dm.resize_size)
        for path, mask in zip(paths, masks, strict=True):  # the file's mask, cover-resized by nearest neighbour
            with Image.open(folders["flat"] / "masks" / f"{Path(path).stem}.png") as source:
                expected = np.asarray(source.resize(tuple(dm.resize_size[::-1]), Image.NEAREST))
            assert set(np.unique(mask)) <= set(np.unique(expected))
            assert (mask == expected).mean() > 0.97, path  # nearest neighbour on the same grid, to the pixel rounding
    layout = dm.load_cache().manifest["splits"]["train"]["checksums"]["targets"]
    assert layout["block_size"] > 0 and layout["images"]  # the masks are checksummed, block by block


def test_split_folders_and_an_image_mask_csv_give_the_same_cache(folders) -> None:
    by_folders = cached(module(folders["splits"], folders["tmp"] / "c2"))
    by_csv = cached(module(folders["splits"], folders["tmp"] / "c3", labels="pairs.csv"))
    assert list(by_folders) == list(by_csv) == ["train", "val", "test"]
    for split, (paths, masks) in by_folders.items():
        assert by_csv[split][0] == paths and np.array_equal(by_csv[split][1], masks)


def test_without_classes_txt_the_classes_are_numbered_and_one_line_says_so(folders, tmp_path, caplog) -> None:
    root = shutil.copytree(folders["flat"], tmp_path / "flat")
    (root / "classes.txt").unlink()
    with caplog.at_level(logging.INFO, logger="litstarter"):
        dm = module(root, tmp_path / "cache")
    assert dm.class_names == [str(i) for i in range(11)]
    said = [r.getMessage() for r in caplog.records if "classes.txt" in r.getMessage()]
    assert len(said) == 1 and "11 classes" in said[0]


def test_binary_masks_of_0_and_255_are_background_and_foreground(tmp_path) -> None:
    root = tmp_path / "binary"
    for i in range(12):
        for folder in ("images", "masks"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        mask = np.zeros((20, 24), dtype=np.uint8)
        mask[4 : 8 + i % 5, 3:12] = 255
        Image.fromarray(mask).save(root / "masks" / f"{i}.png")
        Image.fromarray(mask // 2 + 30).save(root / "images" / f"{i}.png")
    dm = ImageFolderDataModule(str(root), image_size=16, cache_dir=str(tmp_path / "c"), binary_masks=True)
    assert dm.class_names == ["background", "foreground"]
    masks = np.concatenate([np.asarray(m) for _, m in cached(dm).values()])
    assert set(np.unique(masks)) == {0, 1}


def test_a_palette_maps_colour_masks_to_classes(tmp_path) -> None:
    root = tmp_path / "colours"
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()
    (root / "classes.txt").write_text("sky\nroad\ncar\n")
    (root / "palette.json").write_text('{"sky": [0, 0, 255], "road": [128, 64, 128], "car": [255, 0, 0]}')
    colours = np.array([[0, 0, 255], [128, 64, 128], [255, 0, 0]], dtype=np.uint8)
    for i in range(10):
        index = np.zeros((16, 16), dtype=np.int64)
        index[8:, :] = 1
        index[10:14, 2 + i : 6 + i] = 2
        Image.fromarray(colours[index]).save(root / "masks" / f"{i}.png")
        Image.fromarray((index * 80).astype(np.uint8)).save(root / "images" / f"{i}.png")
    dm = ImageFolderDataModule(str(root), image_size=16, cache_dir=str(tmp_path / "c"), crop_pct=1.0)
    for split, (paths, masks) in cached(dm).items():
        for path, mask in zip(paths, masks, strict=True):
            with Image.open(root / path) as image:
                assert np.array_equal(mask, np.asarray(image) // 80), (split, path)


def bad_folder(tmp_path: Path, problem: str) -> tuple[Path, dict, str]:
    """A small mask folder with one planted problem; the options to read it, and what the refusal must name."""
    root = write_mask_folder(tmp_path / problem, 12)
    options: dict = {}
    if problem == "mask-without-image":
        next((root / "images").glob("004.*")).unlink()
        return root, options, "masks/004"  # the mask's name, under masks/
    if problem == "image-without-mask":
        (root / "masks" / "005.png").unlink()
        return root, options, "005"
    if problem in ("size", "size-resized"):
        Image.new("L", (50, 40)).save(root / "masks" / "003.png")
        return root, ({"mask_resize": "nearest"} if problem == "size-resized" else options), "masks/003.png"
    if problem == "index":
        mask = np.zeros((48, 48), dtype=np.uint8)
        mask[:4, :4] = 12
        Image.fromarray(mask).save(root / "masks" / "006.png")
        return root, options, "masks/006.png"
    if problem == "colour":
        (root / "palette.json").write_text('{"background": [0, 0, 0], "0": [255, 0, 0]}')
        Image.new("RGB", (48, 48), (9, 9, 9)).save(root / "masks" / "000.png")
        return root, options, "masks/000.png"
    raise AssertionError(problem)


@pytest.mark.parametrize("problem", ["mask-without-image", "image-without-mask", "size", "index", "colour"])
def test_each_bad_mask_is_refused_naming_its_file(tmp_path: Path, problem: str) -> None:
    root, options, named = bad_folder(tmp_path, problem)
    with pytest.raises(BadInputError) as refused:
        dm = module(root, tmp_path / "cache", **options)
        dm.load_cache()
    message = str(refused.value)
    assert named in message and "Traceback" not in message, message
    what = {"size": "50x40", "index": "index 12", "colour": "[9, 9, 9]"}.get(problem, "no")
    assert what in message, message


def test_a_mask_of_another_size_is_resized_to_its_image_when_asked(tmp_path: Path) -> None:
    root, options, _ = bad_folder(tmp_path, "size-resized")
    dm = module(root, tmp_path / "cache", **options)
    assert sum(len(paths) for paths, _ in cached(dm).values()) == 12


def test_a_mask_edited_since_the_cache_was_built_rebuilds_it(tmp_path: Path) -> None:
    root = write_mask_folder(tmp_path / "pool", 12)
    first = module(root, tmp_path / "cache").load_cache()
    assert not first.reused and module(root, tmp_path / "cache").load_cache().reused
    mask = np.asarray(Image.open(root / "masks" / "002.png")).copy()
    mask[:2, :2] = 3
    Image.fromarray(mask).save(root / "masks" / "002.png")
    assert not module(root, tmp_path / "cache").load_cache().reused


def test_the_images_exif_orientation_turns_its_mask_too(tmp_path: Path) -> None:
    root = tmp_path / "turned"
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()
    for i in range(10):
        mask = np.zeros((20, 30), dtype=np.uint8)
        mask[:5, :10] = 1 + i % 2  # a block in the stored top-left corner
        image = Image.fromarray(mask * 100)
        exif = image.getexif()
        exif[0x0112] = 6  # shown turned a quarter clockwise: the block lands top-right
        image.save(root / "images" / f"{i}.jpg", exif=exif.tobytes(), quality=95)
        Image.fromarray(mask).save(root / "masks" / f"{i}.png")
    dm = ImageFolderDataModule(str(root), image_size=(30, 20), crop_pct=1.0, cache_dir=str(tmp_path / "c"))
    cache = dm.load_cache()
    for split in cache.splits:
        for image, mask in zip(cache.images(split).array(), np.asarray(cache.targets(split)), strict=True):
            assert mask.shape == (30, 20) and mask[:10, 15:].all() and not mask[20:, :].any()
            assert ((image[0] > 50) == (mask > 0)).mean() > 0.97
