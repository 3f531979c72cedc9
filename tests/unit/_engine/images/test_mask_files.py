"""Masks read as users have them: 0/255 (or 0/1) masks without ``data.binary_masks`` are binary, said in one line;
a class without a train pixel is warned about; lossy mask files, an ``ignore_index`` that is a class and a mask
cell leading out of ``data.root`` are refused in one line naming the cause; a palette dict names the classes."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from litstarter._engine.images.mask_classes import binary_foreground
from litstarter._engine.images.mask_formats import lossy_format
from litstarter.data import ImageFolderDataModule
from litstarter.errors import BadInputError, UsageError

pytestmark = pytest.mark.filterwarnings("ignore:data leakage:UserWarning")  # the drawn images look alike


def write_masks(root: Path, foreground: int = 255, images: int = 12, suffix: str = ".png", **save) -> Path:
    """``root/images/<i>.png`` beside ``root/masks/<i><suffix>``: a block of ``foreground`` on 0, no classes.txt."""
    for folder in ("images", "masks"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for i in range(images):
        mask = np.zeros((24, 24), dtype=np.uint8)
        mask[4 : 10 + i % 6, 3 + i % 4 : 15] = foreground
        Image.fromarray(np.where(mask > 0, 200, 40).astype(np.uint8)).save(root / "images" / f"{i}.png")
        Image.fromarray(mask).save(root / "masks" / f"{i}{suffix}", **save)
    return root


def module(root: Path, tmp_path: Path, **options) -> ImageFolderDataModule:
    return ImageFolderDataModule(
        str(root), image_size=16, crop_pct=1.0, cache_dir=str(tmp_path / "cache"), num_workers=0, **options
    )


def train_masks(dm: ImageFolderDataModule) -> np.ndarray:
    return np.asarray(dm.load_cache().targets("train"))


def said(caplog, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


@pytest.mark.parametrize("foreground", [255, 1])
def test_masks_of_only_0_and_255_or_1_are_binary_and_one_line_says_so(tmp_path, caplog, foreground) -> None:
    root = write_masks(tmp_path / "data", foreground)
    with caplog.at_level(logging.INFO, logger="litstarter"):
        dm = module(root, tmp_path)
    assert dm.class_names == ["background", "foreground"]
    notes = said(caplog, "read as binary masks")
    assert len(notes) == 1 and f"only 0 and {foreground}" in notes[0] and "data.binary_masks: false" in notes[0]
    assert "\n" not in notes[0]
    masks = train_masks(dm)
    assert set(np.unique(masks)) == {0, 1} and (masks == 1).mean() > 0.1  # the foreground is learnt, not ignored


def test_binary_masks_false_keeps_255_as_ignore_index_and_the_empty_class_is_warned(tmp_path, caplog) -> None:
    root = write_masks(tmp_path / "data")
    with caplog.at_level(logging.INFO, logger="litstarter"):
        dm = module(root, tmp_path, binary_masks=False)
        assert dm.class_names == ["0", "1"] and not said(caplog, "read as binary")
        assert set(np.unique(train_masks(dm))) == {0, 255}
    assert len(said(caplog, "classes ['1'] have no pixel in the train split")) == 1


@pytest.mark.parametrize(
    ("held", "foreground"),
    [({0, 255}, 255), ({0, 1}, 1), ({255}, 255), ({0}, None), ({0, 1, 255}, None), ({0, 2}, None), (set(), None)],
)
def test_only_0_and_255_or_0_and_1_with_the_foreground_present_are_binary(held, foreground) -> None:
    assert binary_foreground(held) == foreground


def test_masks_with_classes_txt_are_read_as_it_says_and_a_class_without_train_pixels_is_warned(tmp_path, caplog):
    root = write_masks(tmp_path / "data")
    (root / "classes.txt").write_text("road\nlane\n")  # the masks never hold 1: 'lane' has no pixel
    dm = module(root, tmp_path)
    assert dm.class_names == ["road", "lane"]
    with caplog.at_level(logging.WARNING, logger="litstarter"):
        dm.load_cache()
    lines = said(caplog, "train split")
    assert len(lines) == 1 and "['lane'] have no pixel in the train split" in lines[0] and "\n" not in lines[0]
    assert "data.binary_masks" in lines[0]


def test_no_warning_when_every_class_has_train_pixels(tmp_path, caplog) -> None:
    dm = module(write_masks(tmp_path / "data"), tmp_path)
    with caplog.at_level(logging.WARNING, logger="litstarter"):
        dm.load_cache()
    assert not said(caplog, "train split")


def lossy_webp(path: Path) -> Path:
    mask = np.zeros((24, 24), dtype=np.uint8)
    mask[4:12, 3:15] = 1
    Image.fromarray(mask).save(path, "WEBP", quality=80)
    return path


@pytest.mark.parametrize("binary", [None, False])
@pytest.mark.parametrize("classes_txt", [False, True])
def test_jpeg_masks_are_refused_in_one_line_naming_the_file_before_anything_is_cached(
    tmp_path, binary, classes_txt
) -> None:
    root = write_masks(tmp_path / "data", suffix=".jpg", quality=75)
    if classes_txt:
        (root / "classes.txt").write_text("background\nthing\n")
    with pytest.raises(BadInputError) as refused:
        module(root, tmp_path, binary_masks=binary).load_cache()
    message = str(refused.value)
    assert message.startswith("mask 'masks/0.jpg' is a JPEG") and "9 more" in message, message
    assert "save masks as PNG" in message and "\n" not in message
    assert not (tmp_path / "cache").exists()  # refused before the cache was begun


def test_a_lossy_webp_is_refused_and_a_lossless_one_read(tmp_path) -> None:
    root = write_masks(tmp_path / "data", foreground=1)
    lossy_webp(root / "masks" / "3.webp")
    (root / "masks" / "3.png").unlink()
    with pytest.raises(BadInputError, match=r"^mask 'masks/3.webp' is a lossy WebP: .*save masks as PNG"):
        module(root, tmp_path)
    with Image.open(root / "images" / "3.png") as image:  # lossless: the same indices
        mask = (np.asarray(image) > 100).astype(np.uint8)
    Image.fromarray(mask).save(root / "masks" / "3.webp", "WEBP", lossless=True)
    assert lossy_format(root / "masks" / "3.webp") is None
    assert module(root, tmp_path).class_names == ["background", "foreground"]


def test_a_jpeg_named_png_is_refused_when_decoded_naming_the_file(tmp_path) -> None:
    root = write_masks(tmp_path / "data", foreground=1)
    (root / "classes.txt").write_text("background\nthing\n")
    buffer = io.BytesIO()
    Image.open(root / "masks" / "2.png").save(buffer, "JPEG", quality=90)
    (root / "masks" / "2.png").write_bytes(buffer.getvalue())
    with pytest.raises(BadInputError, match=r"masks/2.png': a JPEG: lossy compression"):
        module(root, tmp_path).load_cache()


def test_a_palette_dict_without_classes_txt_names_the_classes_by_its_keys(tmp_path, caplog) -> None:
    root = tmp_path / "data"
    colours = np.array([[0, 0, 0], [128, 64, 128], [255, 0, 0]], dtype=np.uint8)
    for folder in ("images", "masks"):
        (root / folder).mkdir(parents=True)
    for i in range(10):
        index = np.zeros((16, 16), dtype=np.int64)
        index[8:, :] = 1
        index[10:14, 2 + i % 5 : 6 + i % 5] = 2
        Image.fromarray(colours[index]).save(root / "masks" / f"{i}.png")
        Image.fromarray((index * 80).astype(np.uint8)).save(root / "images" / f"{i}.png")
    (root / "palette.json").write_text('{"sky": [0, 0, 0], "road": [128, 64, 128], "car": [255, 0, 0]}')
    with caplog.at_level(logging.INFO, logger="litstarter"):
        dm = module(root, tmp_path)
    assert dm.class_names == ["sky", "road", "car"] and len(said(caplog, "3 classes from palette.json")) == 1
    for mask in train_masks(dm):
        assert set(np.unique(mask)) <= {0, 1, 2}


@pytest.mark.parametrize("classes_txt", [True, False])
def test_an_ignore_index_that_is_a_class_is_refused_naming_it_and_the_class(tmp_path, classes_txt) -> None:
    root = write_masks(tmp_path / "data", foreground=1)
    if classes_txt:
        (root / "classes.txt").write_text("road\nlane\n")
    with pytest.raises(UsageError) as refused:
        module(root, tmp_path, ignore_index=1)
    message = str(refused.value)
    name = "lane" if classes_txt else "foreground"
    assert message.startswith(f"data.ignore_index is 1, the index of class '{name}'") and "\n" not in message


def test_a_mask_cell_leading_out_of_the_root_is_named_as_the_mask(tmp_path) -> None:
    root = write_masks(tmp_path / "data", foreground=1)
    (root / "classes.txt").write_text("road\nlane\n")
    rows = ["image,mask", *(f"images/{i}.png,masks/{i}.png" for i in range(1, 12)), "images/0.png,../outside.png"]
    (root / "pairs.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(BadInputError) as refused:
        module(root, tmp_path, labels="pairs.csv")
    message = str(refused.value)
    assert "line 13 mask '../outside.png' (leaves data.root)" in message and "images/0.png" not in message, message
