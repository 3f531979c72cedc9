"""Folder layouts: detection, listing, the stratified seeded split, and the errors for a wrong folder."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from litstarter.data.folder_layout import detect_layout, list_sources
from tests.data.images import make_class_folder, make_split_folder, write_image


def test_class_layout_splits_every_class_by_the_fractions_seeded(tmp_path: Path) -> None:
    root = make_class_folder(tmp_path / "root", {"b_dog": 20, "a_cat": 10})
    layout, classes = detect_layout(root)
    assert layout == "classes" and classes == ["a_cat", "b_dog"]  # sorted folder names
    sources = list_sources(root, layout, classes, 0.2, 0.1, seed=3)
    per_split = {s: Counter(f.label for f in files) for s, files in sources.items()}
    assert per_split == {"train": {0: 7, 1: 14}, "val": {0: 2, 1: 4}, "test": {0: 1, 1: 2}}
    paths = [f.path for f in paths_of(sources)]
    assert len(paths) == len(set(paths)) == 30
    assert all(f.path.startswith(classes[f.label] + "/") for f in paths_of(sources))
    assert list_sources(root, layout, classes, 0.2, 0.1, seed=3) == sources
    other = list_sources(root, layout, classes, 0.2, 0.1, seed=4)
    assert {f.path for f in other["val"]} != {f.path for f in sources["val"]}
    # Adding a file to one class leaves the other class's split alone.
    write_image(root / "b_dog" / "new.png")
    grown = list_sources(root, layout, classes, 0.2, 0.1, seed=3)
    assert [f for f in grown["val"] if f.label == 0] == [f for f in sources["val"] if f.label == 0]


def paths_of(sources):
    return [f for files in sources.values() for f in files]


def test_split_layout_is_used_as_given_and_test_is_optional(tmp_path: Path) -> None:
    root = make_split_folder(tmp_path / "root", {"train": {"x": 3, "y": 4}, "val": {"x": 1, "y": 2}})
    layout, classes = detect_layout(root)
    assert layout == "splits" and classes == ["x", "y"]
    sources = list_sources(root, layout, classes, 0.1, 0.1, seed=0)
    assert set(sources) == {"train", "val"}
    assert [f.path for f in sources["val"]] == ["val/x/000.png", "val/y/000.png", "val/y/001.png"]
    make_class_folder(root / "test", {"x": 2, "y": 2})
    assert Counter(f.label for f in list_sources(root, layout, classes, 0.1, 0.1, 0)["test"]) == {0: 2, 1: 2}


def test_hidden_and_non_image_files_are_ignored_and_subfolders_are_walked(tmp_path: Path) -> None:
    root = make_class_folder(tmp_path / "root", {"a": 3, "b": 3})
    (root / "a" / ".DS_Store").write_bytes(b"\0\1")
    (root / "a" / "notes.txt").write_text("not an image")
    (root / "a" / "._000.png").write_bytes(b"macOS resource fork")
    write_image(root / "a" / ".ipynb_checkpoints" / "x.png")
    write_image(root / ".hidden_class" / "x.png")
    write_image(root / "b" / "nested" / "deeper.JPG")
    layout, classes = detect_layout(root)
    assert classes == ["a", "b"]
    files = paths_of(list_sources(root, layout, classes, 0.34, 0.0, seed=0))
    assert sorted(f.path for f in files) == [
        "a/000.png", "a/001.png", "a/002.png", "b/000.png", "b/001.png", "b/002.png", "b/nested/deeper.JPG",
    ]  # fmt: skip


def test_missing_root_and_root_without_class_folders_show_the_expected_layout(tmp_path: Path) -> None:
    layouts = r"(?s)does not exist; expected one of these layouts.*nope/<class>/<image>.*nope/\{train,val,test\}/"
    with pytest.raises(FileNotFoundError, match=layouts):
        detect_layout(tmp_path / "nope")
    (tmp_path / "flat").mkdir()
    write_image(tmp_path / "flat" / "loose.png")
    with pytest.raises(ValueError, match=r"(?s)'.*flat' has no class folders; expected.*flat/<class>/<image>"):
        detect_layout(tmp_path / "flat")
    make_split_folder(tmp_path / "half", {"train": {"x": 2}})
    with pytest.raises(ValueError, match=r"needs 'train' and 'val'"):
        detect_layout(tmp_path / "half")


def test_empty_class_folders_are_errors_naming_every_folder(tmp_path: Path) -> None:
    root = make_class_folder(tmp_path / "root", {"a": 4})
    (root / "empty1").mkdir()
    (root / "empty2").mkdir()
    (root / "empty2" / "readme.txt").write_text("no images here")
    layout, classes = detect_layout(root)
    with pytest.raises(ValueError, match="2 class folder") as info:
        list_sources(root, layout, classes, 0.25, 0.0, seed=0)
    assert str(root / "empty1") in str(info.value) and str(root / "empty2") in str(info.value)
    # The same in a split layout, for val.
    split_root = make_split_folder(tmp_path / "split", {"train": {"a": 2, "b": 2}, "val": {"a": 1}})
    (split_root / "val" / "b").mkdir()
    layout, classes = detect_layout(split_root)
    with pytest.raises(ValueError, match=str(split_root / "val" / "b")):
        list_sources(split_root, layout, classes, 0.1, 0.1, seed=0)


def test_a_class_with_too_few_images_for_the_split_is_named(tmp_path: Path) -> None:
    root = make_class_folder(tmp_path / "root", {"plenty": 10, "single": 1, "pair": 2})
    layout, classes = detect_layout(root)
    with pytest.raises(ValueError, match=r"class 'single' .* has 1 image") as info:
        list_sources(root, layout, classes, 0.2, 0.1, seed=0)
    assert "class 'pair'" in str(info.value) and "at least 3" in str(info.value)
    assert "plenty" not in str(info.value)
    # Without a test split two images are enough.
    small = make_class_folder(tmp_path / "small", {"pair": 2, "plenty": 10})
    sources = list_sources(small, "classes", ["pair", "plenty"], 0.2, 0.0, seed=0)
    assert set(sources) == {"train", "val"}
    assert Counter(f.label for f in sources["val"]) == {0: 1, 1: 2}


def test_a_val_class_unknown_to_train_is_an_error(tmp_path: Path) -> None:
    root = make_split_folder(tmp_path / "root", {"train": {"a": 2}, "val": {"a": 1, "zebra": 1}})
    layout, classes = detect_layout(root)
    with pytest.raises(ValueError, match=r"\['zebra'\]"):
        list_sources(root, layout, classes, 0.1, 0.1, seed=0)
