"""data.labels: a CSV of path,label[,split] rows, its rules, and the cache treating it like folders."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from litstarter._engine.images.cache import MANIFEST
from litstarter._engine.images.folder import CachedImageFolder
from litstarter._engine.images.labels_csv import ABSOLUTE_OPTION
from litstarter.data import ImageFolderDataModule
from litstarter.errors import BadInputError, UsageError
from tests.helpers import make_image_folder


def write_csv(path: Path, rows: list[str], header: str = "path,label,split") -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


@pytest.fixture
def pool(tmp_path: Path) -> Path:
    """Images with neutral names in one folder: ``root/img/<class>_<i>.png``; the CSV gives the labels."""
    root = tmp_path / "root"
    make_image_folder(root / "img", {"10": 6, "2": 6})  # numeric labels are names: sorted "10" < "2"
    return root


def module(root: Path, tmp_path: Path, labels: str, **kwargs) -> ImageFolderDataModule:
    defaults = {"image_size": 16, "num_workers": 0, "val_fraction": 0.34, "test_fraction": 0.0}
    dm = ImageFolderDataModule(str(root), labels=labels, cache_dir=str(tmp_path / "cache"), **{**defaults, **kwargs})
    dm.prepare_data()
    dm.setup("fit")
    return dm


def test_split_column_takes_split_aliases_and_labels_are_names(pool: Path, tmp_path: Path, caplog) -> None:
    rows = [f"img/10/00{i}.png,10,{'Training' if i < 4 else 'VAL'}" for i in range(6)]
    rows += [f"./img/2//00{i}.png,2,{'train' if i < 4 else 'dev'}" for i in range(6)]
    write_csv(pool / "labels.csv", rows)
    with caplog.at_level("INFO"):
        dm = module(pool, tmp_path, "labels.csv")
    assert dm.class_names == ["10", "2"] and dm.folder.layout.kind == "labels"
    assert (len(dm.train_set), len(dm.val_set), dm.test_split) == (8, 4, "val")
    assert "layout labels file" in caplog.text and "train 8 (labels.csv split=train)" in caplog.text
    assert "no test split: test-after-fit tests on val" in caplog.text


def test_without_a_split_column_the_fractions_split_it_and_a_changed_csv_rebuilds(pool: Path, tmp_path: Path) -> None:
    rows = [f"img/{c}/00{i}.png,{c}" for c in ("10", "2") for i in range(6)]
    csv = write_csv(pool / "labels.csv", rows, "path,label")
    dm = module(pool, tmp_path, "labels.csv", test_fraction=0.2)
    sizes = {s: Counter(dm.cache.targets(s).tolist()) for s in dm.cache.splits}
    assert sizes == {"train": {0: 3, 1: 3}, "val": {0: 2, 1: 2}, "test": {0: 1, 1: 1}}
    assert module(pool, tmp_path, "labels.csv", test_fraction=0.2).cache.reused
    csv.write_text(csv.read_text().replace("img/2/005.png,2", "img/2/005.png,10"))  # one label changed
    relabelled = module(pool, tmp_path, "labels.csv", test_fraction=0.2)
    assert not relabelled.cache.reused
    assert sum(Counter(relabelled.cache.targets(s).tolist())[0] for s in relabelled.cache.splits) == 7


def test_missing_files_are_bad_files_listed_together(pool: Path, tmp_path: Path) -> None:
    rows = [f"img/{c}/00{i}.png,{c}" for c in ("10", "2") for i in range(6)]
    write_csv(pool / "labels.csv", [*rows, "img/10/gone_1.png,10", "img/2/gone_2.png,2"], "path,label")
    with pytest.raises(BadInputError, match=r"2 image file\(s\) .* could not be read") as info:
        module(pool, tmp_path, "labels.csv")
    assert "gone_1.png: missing (no such file)" in str(info.value) and "gone_2.png" in str(info.value)
    with pytest.warns(UserWarning, match="left out 2 unreadable"):
        dm = module(pool, tmp_path, "labels.csv", on_bad_file="skip")
    assert len(dm.train_set) + len(dm.val_set) == 12
    assert len(json.loads((dm.cache.folder / MANIFEST).read_text())["skipped"]) == 2


@pytest.mark.parametrize(
    ("header", "rows", "message"),
    [
        ("path,label", ["img/10/000.png,10", "img/10//000.png,10", "img/2/000.png,2"],
         r"1 path\(s\) twice .*line 2 'img/10/000.png' \(label 10\) and line 3 'img/10//000.png' \(label 10\)"),
        ("file,class", ["img/10/000.png,10"], r"columns \['file', 'class'\]; expected a header with path,label"),
        ("path,label,split", ["img/10/000.png,10,holdout"], r"line 2: split 'holdout' is not one of"),
        ("path,label,split", ["img/10/000.png,10,train", "img/2/000.png,2,val"],
         r"split val lacks class\(es\) \['10'\] and has class\(es\) \['2'\] that train lacks"),
        ("path,label,split", ["img/10/000.png,10,train", "img/2/000.png,2,train", "img/2/001.png,2,test"],
         r"split test lacks class\(es\) \['10'\]"),
        ("path,label", ["img/10/000.png,"], r"line 2: 'path' and 'label' must both be set"),
    ],
)  # fmt: skip
def test_bad_labels_files_are_one_sentence_naming_the_file(pool, tmp_path, header, rows, message) -> None:
    write_csv(pool / "labels.csv", rows, header)
    with pytest.raises(BadInputError, match=message) as info:
        ImageFolderDataModule(str(pool), labels="labels.csv", cache_dir=str(tmp_path))
    assert "labels.csv" in str(info.value)


def test_a_labels_file_that_does_not_exist_is_a_usage_error(pool: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"data.labels '.*nope.csv' does not exist"):
        ImageFolderDataModule(str(pool), labels="nope.csv", cache_dir=str(tmp_path))


def test_absolute_paths_are_read_only_when_asked_for_and_relative_ones_still_stay_inside(pool, tmp_path) -> None:
    """A CSV listing files across disks: refused by default (naming the option), read with
    ``labels_absolute_paths``, the files cached under their absolute path; ``..`` stays refused, and an absolute
    spelling of a listed file is that file twice."""
    disk = make_image_folder(tmp_path / "other_disk", {"10": 2, "2": 2}, seed=1)
    rows = [f"img/{c}/00{i}.png,{c}" for c in ("10", "2") for i in range(6)]
    rows += [f"{disk / c / f'00{i}.png'},{c}" for c in ("10", "2") for i in range(2)]
    write_csv(pool / "labels.csv", rows, "path,label")
    with pytest.raises(BadInputError, match=r"4 row\(s\) name a file outside data.root .* \(absolute\)") as info:
        CachedImageFolder(pool, "labels.csv", cache_dir=tmp_path / "cache")
    assert f"line 14 '{disk}/10/000.png'" in str(info.value) and f"{ABSOLUTE_OPTION}: true" in str(info.value)

    folder = CachedImageFolder(pool, "labels.csv", image_size=16, cache_dir=tmp_path / "cache",
                               val_fraction=0.25, test_fraction=0.0, labels_absolute_paths=True)  # fmt: skip
    listing = folder.listing()
    assert f"paths under {pool}, 4 absolute" in listing.layout
    cache = folder.load_or_build(listing)
    cached = [p for split in cache.splits for p in cache.column(split, "path")]
    assert len(cached) == 16 and sum(p.startswith(f"{disk}/") for p in cached) == 4

    twice = r"line 13 'img/2/005.png' \(label 2\) and line 18 '.*/img/2/005.png' \(label 10\)"
    for extra, said in [("../escape.png,10", r"line 18 '../escape.png' \(leaves data.root\)"),
                        (f"{pool}/img/2/005.png,10", twice)]:  # fmt: skip
        write_csv(pool / "labels.csv", [*rows, extra], "path,label")
        with pytest.raises(BadInputError, match=said):
            CachedImageFolder(pool, "labels.csv", cache_dir=tmp_path / "cache", labels_absolute_paths=True).listing()
