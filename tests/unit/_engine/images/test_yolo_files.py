"""YOLO's ``data.yaml``: a ``path``, ``train``, ``val`` or ``test`` that is absolute or climbs out of data.root is
refused naming data.yaml and the key, except the two spellings real exports use, read as Ultralytics reads them
with a line saying so (Roboflow's ``train: ../train/images``, Ultralytics' absolute ``path`` of the dataset's own
folder); list files (``train: train.txt``) are read as Ultralytics writes them, their lines confined the same way."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from litstarter.data import ImageFolderDataModule
from litstarter.data.digit_boxes import CLASS_NAMES, write_canvases, write_yolo
from litstarter.errors import BadInputError


@pytest.fixture(scope="module")
def yolo(tmp_path_factory) -> Path:
    """12 canvases as a YOLO set (``images/<split>``, ``labels/<split>``, ``data.yaml``). Copy before editing."""
    root = tmp_path_factory.mktemp("yolo") / "root"
    write_yolo(root, write_canvases(root, 12, seed=6))
    return root


def with_config(yolo: Path, tmp_path: Path, edit) -> Path:
    root = shutil.copytree(yolo, tmp_path / "root")
    (root / "data.yaml").write_text(edit((root / "data.yaml").read_text()))
    return root


def module(root: Path, cache: Path) -> ImageFolderDataModule:
    return ImageFolderDataModule(str(root), image_size=64, crop_pct=1.0, cache_dir=str(cache), num_workers=0)


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [("path", "ABSOLUTE", "absolute"), ("path", "../root", "leaves data.root"),
     ("train", "ABSOLUTE/images/train", "absolute"), ("val", "../root/images/val", "leaves data.root"),
     ("test", "images/../../x", "leaves data.root"), ("train", "../../etc", "leaves data.root")],
)  # fmt: skip
def test_a_key_that_leaves_the_root_is_refused_naming_data_yaml_and_the_key(yolo, tmp_path, key, value, why) -> None:
    value = value.replace("ABSOLUTE", str(yolo))  # the very same folder, outside this copy's root
    if key == "path":
        root = with_config(yolo, tmp_path, lambda text: f"path: {value}\n{text}")
    else:
        root = with_config(yolo, tmp_path, lambda text: "\n".join(
            f"{key}: {value}" if line.startswith(f"{key}:") else line for line in text.splitlines()
        ))  # fmt: skip
    with pytest.raises(BadInputError) as refused:
        module(root, tmp_path / "cache")
    message = str(refused.value)
    assert message.startswith(f"'{root / 'data.yaml'}': 1 key(s) name a folder"), message
    assert f"key {key} '{value}' ({why})" in message and "\n" not in message, message
    assert ("Roboflow" in message) == (value.startswith("../") and key != "path"), message
    assert not (tmp_path / "cache").exists()


def test_a_list_file_reads_as_its_folder_does(yolo, tmp_path: Path) -> None:
    """``train: train.txt`` of ``./images/train/...`` lines (as Ultralytics' autosplit writes), ``val`` a list of
    plain relative lines under a ``path``: the same cache as the folders give."""
    folders = module(yolo, tmp_path / "folders").load_cache()
    root = shutil.copytree(yolo, tmp_path / "root")
    train = sorted(p.relative_to(root).as_posix() for p in (root / "images" / "train").glob("*.png"))
    (root / "train.txt").write_text("# the train images\n" + "".join(f"./{p}\n" for p in train))
    (root / "lists").mkdir()
    val = sorted(p.relative_to(root).as_posix() for p in (root / "images" / "val").glob("*.png"))
    (root / "lists" / "val.txt").write_text("\n".join(val) + "\n\n")
    config = (root / "data.yaml").read_text().replace("train: images/train", "train: train.txt")
    (root / "data.yaml").write_text("path: .\n" + config.replace("val: images/val", "val: lists/val.txt"))
    lists = module(root, tmp_path / "lists").load_cache()
    for split in ("train", "val", "test"):
        assert list(lists.column(split, "path")) == list(folders.column(split, "path")), split
        assert np.array_equal(lists.targets(split).stored, folders.targets(split).stored), split


@pytest.mark.parametrize("line", ["../outside/x.png", "/etc/passwd"])
def test_a_list_files_line_outside_the_root_is_refused_naming_the_file_and_the_line(yolo, tmp_path, line) -> None:
    root = with_config(yolo, tmp_path, lambda text: text.replace("train: images/train", "train: train.txt"))
    (root / "train.txt").write_text(f"./images/train/0000.png\n{line}\n")
    with pytest.raises(BadInputError) as refused:
        module(root, tmp_path / "cache")
    message = str(refused.value)
    assert message.startswith(f"'{root / 'train.txt'}': 1 line(s) name a file outside data.root"), message
    assert f"line 2 '{line}'" in message and not (tmp_path / "cache").exists()


def test_a_missing_list_file_or_folder_is_named(yolo, tmp_path: Path) -> None:
    root = with_config(yolo, tmp_path, lambda text: text.replace("train: images/train", "train: nope.txt"))
    with pytest.raises(BadInputError, match=r"names folders or list files that do not exist: \['train: .*nope.txt'\]"):
        module(root, tmp_path / "cache")


def test_a_class_named_twice_is_refused_naming_both_indices(yolo, tmp_path: Path) -> None:
    root = with_config(yolo, tmp_path, lambda text: text.replace("1: '1'", "1: '0'"))
    with pytest.raises(BadInputError, match=r"data.yaml' names a class twice: '0' is class 0 and 1; name each class"):
        module(root, tmp_path / "cache")


def read_as_plain(root: Path, yolo: Path, tmp_path: Path) -> bool:
    """Whether ``root`` caches the same images (by file name) with the same boxes, split by split, as ``yolo``."""
    read, plain = (module(r, tmp_path / f"cache-{r.name}").load_cache() for r in (root, yolo))
    return read.splits == plain.splits and all(
        [Path(p).name for p in read.column(s, "path")] == [Path(p).name for p in plain.column(s, "path")]
        and np.array_equal(read.targets(s).stored, plain.targets(s).stored)
        for s in plain.splits
    )


#: ``data.yaml`` as Roboflow's YOLO export writes it (YOLOv8 and later), beside train/, valid/ and test/.
ROBOFLOW_YAML = """train: ../train/images
val: ../valid/images
test: ../test/images

nc: 10
names: [{names}]

roboflow:
  workspace: digits
  project: boxes
  version: 1
  license: CC BY 4.0
  url: https://universe.roboflow.com/digits/boxes/dataset/1
"""


def test_a_roboflow_export_reads_its_splits_beside_data_yaml_and_says_so(yolo, tmp_path: Path, caplog) -> None:
    """Roboflow's ``../train/images`` leaves data.root; Ultralytics reads it as ``train/images`` when that is
    missing, and so is it here, with a line each, never the folder of that name outside data.root."""
    root = tmp_path / "export"
    for split, folder in (("train", "train"), ("val", "valid"), ("test", "test")):
        for kind in ("images", "labels"):
            shutil.copytree(yolo / kind / split, root / folder / kind)
    names = ", ".join(f"'{n}'" for n in CLASS_NAMES)
    (root / "data.yaml").write_text(ROBOFLOW_YAML.format(names=names))
    shutil.copytree(yolo / "images" / "val", tmp_path / "train" / "images")  # what ../train/images names outside
    with caplog.at_level(logging.INFO, logger="litstarter"):
        assert read_as_plain(root, yolo, tmp_path)  # the export's own images: not those outside
    said = [r.getMessage() for r in caplog.records if "leaves data.root: read as" in r.getMessage()]
    for key, written in (("train", "train/images"), ("val", "valid/images"), ("test", "test/images")):
        line = f"data: '{root / 'data.yaml'}' key {key} '../{written}' leaves data.root: read as '{written}', as"
        assert any(m.startswith(line) and "\n" not in m for m in said), said


@pytest.mark.parametrize("spelling", ["root", "link"])
def test_an_absolute_path_that_is_the_root_is_read_as_the_root_and_said(yolo, tmp_path, spelling, caplog) -> None:
    """Ultralytics' files carry the dataset's absolute folder as ``path``: the root itself (or a link to it) reads
    as ``.``; an absolute split key inside the root reads as its relative path."""
    root = shutil.copytree(yolo, tmp_path / "root")
    written = str(root) if spelling == "root" else str(tmp_path / "link")
    if spelling == "link":
        (tmp_path / "link").symlink_to(root, target_is_directory=True)
    text = (root / "data.yaml").read_text().replace("val: images/val", f"val: {root / 'images' / 'val'}")
    (root / "data.yaml").write_text(f"path: {written}\n{text}")
    with caplog.at_level(logging.INFO, logger="litstarter"):
        assert read_as_plain(root, yolo, tmp_path)
    messages = [r.getMessage() for r in caplog.records]
    assert f"data: '{root / 'data.yaml'}' key path '{written}' is data.root: read as '.' (relative to data.root)" in (
        messages
    ), messages
    inside = f"key val '{root / 'images' / 'val'}' lies inside data.root: read as 'images/val' (relative to data.root)"
    assert any(m.endswith(inside) for m in messages), messages
