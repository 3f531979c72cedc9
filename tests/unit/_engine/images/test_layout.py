"""Folder layouts: detection, listing, the stratified seeded split, and the errors for a wrong folder."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from litstarter._engine.images.layout import detect_layout, list_sources
from litstarter.errors import BadInputError, UsageError
from tests.helpers import make_image_folder, write_image


def listing_of(root: Path, val_fraction: float = 0.2, test_fraction: float = 0.1, seed: int = 0, labels=None):
    return list_sources(root, detect_layout(root, labels), val_fraction, test_fraction, seed)


def files_of(sources):
    return [f for files in sources.values() for f in files]


def test_class_layout_splits_every_class_by_the_fractions_seeded(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"b_dog": 20, "a_cat": 10})
    layout = detect_layout(root)
    assert layout.kind == "classes" and layout.class_names == ["a_cat", "b_dog"]  # sorted folder names
    sources = list_sources(root, layout, 0.2, 0.1, seed=3).sources
    per_split = {s: Counter(f.target for f in files) for s, files in sources.items()}
    assert per_split == {"train": {0: 7, 1: 14}, "val": {0: 2, 1: 4}, "test": {0: 1, 1: 2}}
    paths = [f.path for f in files_of(sources)]
    assert len(paths) == len(set(paths)) == 30
    assert all(f.path.startswith(layout.class_names[f.target] + "/") for f in files_of(sources))
    assert list_sources(root, layout, 0.2, 0.1, seed=3).sources == sources
    other = list_sources(root, layout, 0.2, 0.1, seed=4).sources
    assert {f.path for f in other["val"]} != {f.path for f in sources["val"]}
    # Adding a file to one class leaves the other class's split alone.
    write_image(root / "b_dog" / "new.png")
    grown = list_sources(root, layout, 0.2, 0.1, seed=3).sources
    assert [f for f in grown["val"] if f.target == 0] == [f for f in sources["val"] if f.target == 0]


def test_split_folders_under_any_alias_and_case_are_used_as_given(tmp_path: Path) -> None:
    root = make_image_folder(
        tmp_path / "root", {"Training": {"x": 3, "y": 4}, "VALID": {"x": 1, "y": 2}, "testing": {"x": 2, "y": 2}}
    )
    layout = detect_layout(root)
    assert layout.kind == "splits" and layout.class_names == ["x", "y"]
    assert layout.split_dirs == {"train": "Training", "val": "VALID", "test": "testing"}
    listing = list_sources(root, layout, 0.5, 0.5, seed=0)
    assert [f.path for f in listing.sources["val"]] == ["VALID/x/000.png", "VALID/y/000.png", "VALID/y/001.png"]
    assert {s: len(f) for s, f in listing.sources.items()} == {"train": 7, "val": 3, "test": 4}
    assert listing.summary() == (
        f"data: layout {root}/{{Training,VALID,testing}}/<class>/<image>; train 7 (Training/), val 3 (VALID/),"
        " test 4 (testing/)"
    )


def test_train_test_carves_val_from_train_stratified_and_seeded(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"train": {"x": 20, "y": 10}, "test": {"x": 3, "y": 3}})
    listing = listing_of(root, val_fraction=0.2, test_fraction=0.4, seed=1)  # test_fraction: not this layout's
    sizes = {s: Counter(f.target for f in files) for s, files in listing.sources.items()}
    assert sizes == {"train": {0: 16, 1: 8}, "val": {0: 4, 1: 2}, "test": {0: 3, 1: 3}}
    assert all(f.path.startswith("train/") for f in listing.sources["val"])
    assert not {f.path for f in listing.sources["val"]} & {f.path for f in listing.sources["train"]}
    assert listing_of(root, 0.2, 0.4, seed=1).sources == listing.sources
    assert {f.path for f in listing_of(root, 0.2, 0.4, seed=2).sources["val"]} != {
        f.path for f in listing.sources["val"]
    }
    assert "val 6 (carved from train/ by data.val_fraction=0.2, stratified, seed 1)" in listing.summary()
    assert listing.test_split == "test"


def test_train_val_has_no_test_split_and_says_test_runs_on_val(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"train": {"x": 3, "y": 4}, "dev": {"x": 1, "y": 2}})
    listing = listing_of(root)
    assert set(listing.sources) == {"train", "val"} and listing.test_split == "val"
    assert listing.summary().endswith("no test split: test-after-fit tests on val (not a held-out score)")


def test_hidden_and_non_image_files_are_ignored_and_subfolders_are_walked(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 3, "b": 3})
    (root / "a" / ".DS_Store").write_bytes(b"\0\1")
    (root / "a" / "notes.txt").write_text("not an image")
    (root / "a" / "._000.png").write_bytes(b"macOS resource fork")
    write_image(root / "a" / ".ipynb_checkpoints" / "x.png")
    write_image(root / ".hidden_class" / "x.png")
    write_image(root / "b" / "nested" / "deeper.JPG")
    assert detect_layout(root).class_names == ["a", "b"]
    files = files_of(listing_of(root, 0.34, 0.0).sources)
    assert sorted(f.path for f in files) == [
        "a/000.png", "a/001.png", "a/002.png", "b/000.png", "b/001.png", "b/002.png", "b/nested/deeper.JPG",
    ]  # fmt: skip


def test_folders_that_fit_no_layout_are_named_with_the_expected_layouts(tmp_path: Path) -> None:
    layouts = r"(?s)does not exist; expected one of these layouts.*nope/<class>/<image>.*nope/\{train,val,test\}/"
    with pytest.raises(UsageError, match=layouts):
        detect_layout(tmp_path / "nope")
    (tmp_path / "flat").mkdir()
    write_image(tmp_path / "flat" / "loose.png")
    with pytest.raises(BadInputError, match=r"(?s)'.*flat' has no class folders; expected.*flat/<class>/<image>"):
        detect_layout(tmp_path / "flat")
    make_image_folder(tmp_path / "no_train", {"val": {"x": 2}, "test": {"x": 2}})
    with pytest.raises(BadInputError, match=r"no train folder"):
        detect_layout(tmp_path / "no_train")
    make_image_folder(tmp_path / "mixed", {"train": {"x": 2}, "val": {"x": 2}, "cats": {"x": 1}})
    with pytest.raises(BadInputError, match=r"mixes split folders \['train', 'val'\] with other folders \['cats'\]"):
        detect_layout(tmp_path / "mixed")
    make_image_folder(tmp_path / "twice", {"train": {"x": 2}, "val": {"x": 2}, "Validation": {"x": 1}})
    with pytest.raises(BadInputError, match=r"two val folders: 'Validation' and 'val'"):
        detect_layout(tmp_path / "twice")


def test_empty_class_folders_are_errors_naming_every_folder(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 4})
    (root / "empty1").mkdir()
    (root / "empty2").mkdir()
    (root / "empty2" / "readme.txt").write_text("no images here")
    with pytest.raises(BadInputError, match="2 class folder") as info:
        listing_of(root, 0.25, 0.0)
    assert str(root / "empty1") in str(info.value) and str(root / "empty2") in str(info.value)
    split_root = make_image_folder(tmp_path / "split", {"train": {"a": 2, "b": 2}, "val": {"a": 1}})
    (split_root / "val" / "b").mkdir()
    with pytest.raises(BadInputError, match=str(split_root / "val" / "b")):
        listing_of(split_root)


def test_a_class_with_too_few_images_for_the_split_is_named(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"plenty": 10, "single": 1, "pair": 2})
    with pytest.raises(BadInputError, match=r"class 'single' has 1 image") as info:
        listing_of(root, 0.2, 0.1)
    assert "class 'pair'" in str(info.value) and "at least 3" in str(info.value)
    assert "plenty" not in str(info.value)
    small = make_image_folder(tmp_path / "small", {"pair": 2, "plenty": 10})
    sources = listing_of(small, 0.2, 0.0).sources  # without a test split two images are enough
    assert set(sources) == {"train", "val"}
    assert Counter(f.target for f in sources["val"]) == {0: 1, 1: 2}


def test_every_split_must_hold_exactly_trains_classes(tmp_path: Path) -> None:
    extra = make_image_folder(tmp_path / "extra", {"train": {"a": 2, "b": 2}, "val": {"a": 1, "b": 1, "zebra": 1}})
    with pytest.raises(BadInputError, match=r"has class folder\(s\) \['zebra'\] that .*train' lacks"):
        listing_of(extra)
    missing = make_image_folder(tmp_path / "missing", {"train": {"a": 2, "b": 2}, "test": {"a": 1}})
    with pytest.raises(BadInputError, match=r"test' lacks class folder\(s\) \['b'\]"):
        listing_of(missing)


def test_directory_link_loops_and_cross_links_never_multiply_the_data(tmp_path: Path) -> None:
    """Folder links ``loop -> ..`` and ``self -> .`` once turned 18 images into 738 samples."""
    root = make_image_folder(tmp_path / "root", {"a": 6, "b": 6, "c": 6})
    os.symlink("..", root / "a" / "loop")
    os.symlink(".", root / "b" / "self")
    os.symlink("../a", root / "c" / "to_a")
    outside = make_image_folder(tmp_path / "elsewhere", {"more": 3})
    os.symlink("..", outside / "more" / "up")  # a loop outside the root ends too
    os.symlink(outside / "more", root / "c" / "extra")  # followed: it leads outside the root
    os.link(root / "a" / "000.png", root / "a" / "hardlink.png")  # one real file, two names
    listing = listing_of(root, 0.34, 0.0)
    files = files_of(listing.sources)
    assert Counter(f.target for f in files) == {0: 6, 1: 6, 2: 9}
    assert len({f.path for f in files}) == len(files) == 21
    assert all(f.path.startswith(("a/", "b/", "c/")) for f in files)
    assert "did not follow 4 folder link(s)" in listing.notes
    assert "counted 1 file(s) once" in listing.notes and "hardlink.png" in listing.notes


def test_names_that_arent_utf8_dangling_links_and_link_loops_are_listed_with_their_problem(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 3, "b": 3})
    odd = os.fsdecode(b"caf\xe9.png")  # Latin-1, not UTF-8
    write_image(root / "a" / odd)
    os.symlink("gone.png", root / "b" / "dangling.png")
    os.symlink("loop.png", root / "b" / "loop.png")
    listing = listing_of(root, 0.01, 0.0)
    paths = {f.path for f in files_of(listing.sources)}
    assert {f"a/{odd}", "b/dangling.png", "b/loop.png"} <= paths
    from litstarter._engine.images.listing import file_problem, shown

    assert file_problem(root / "b" / "dangling.png").startswith("dangling symbolic link")
    assert file_problem(root / "b" / "loop.png").startswith("symbolic link loop")
    assert file_problem(root / "a" / odd) is None and shown(odd) == "caf\\xe9.png"


def test_a_folder_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 3, "b": 3})
    (root / "b" / "locked").mkdir()
    script = (
        "import sys; from litstarter._engine.images.layout import detect_layout, list_sources\n"
        "from litstarter.errors import BadInputError\n"
        f"root = {str(root)!r}\n"
        "try:\n    list_sources(root, detect_layout(root), 0.34, 0.0, 0)\n"
        "except BadInputError as err:\n    print(err); sys.exit(1)\n"
    )
    os.chmod(root / "b" / "locked", 0)
    try:  # without root's override rights (CI runs as root), as a user would be
        proc = subprocess.run(
            ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", sys.executable, "-c", script],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )  # fmt: skip
    finally:
        os.chmod(root / "b" / "locked", 0o755)
    assert proc.returncode == 1, proc.stderr
    assert f"cannot list the folder '{root / 'b' / 'locked'}': Permission denied" in proc.stdout


def test_a_class_folder_name_that_isnt_utf8_is_named(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"cat": 2, os.fsdecode(b"caf\xe9"): 2})
    with pytest.raises(BadInputError, match=r"class folder name\(s\) that aren't valid UTF-8: .*caf\\xe9; rename"):
        detect_layout(root)
