"""``inspect`` on a multi-label labels file: its label-set figures equal a hand count of a planted folder."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import DEFAULT_CONFIG, FOLDER_CONFIG, write_image

#: (labels, split) per image, counted by hand below.
PLANTED = [
    *[(labels, "train") for labels in ("a;b", "a", "a;b;c", "", "b;c", "a", "c", "", "d")],
    *[("a", "val"), ("b", "val"), ("a;c", "test"), ("", "test")],
]


def test_cardinality_empty_sets_pairs_and_balance_equal_a_hand_count(tmp_path: Path, capsys) -> None:
    from litstarter.extras.inspect.command import main

    root = tmp_path / "pool"
    for i in range(len(PLANTED)):
        write_image(root / f"{i:02d}.png", seed=i)
    rows = [f"{i:02d}.png,{labels},{split}" for i, (labels, split) in enumerate(PLANTED)]
    (root / "labels.csv").write_text("path,labels,split\n" + "\n".join(rows) + "\n")
    args = ["--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), f"--data.init_args.root={root}",
            "--data.init_args.labels=labels.csv", f"--data.init_args.cache_dir={tmp_path / 'cache'}"]  # fmt: skip
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    stats = report["label_sets"]
    # Labels per image: 2 1 3 0 2 1 1 0 1 | 1 1 | 2 0 -> 15 over 13 images.
    assert stats["cardinality"] == {"min": 0, "max": 3, "mean": round(15 / 13, 3)}
    assert stats["no_label"] == {"train": 2, "val": 0, "test": 1, "all": 3}
    # a+b: images 0, 2; a+c: 2, 11; b+c: 2, 4.
    assert sorted(map(tuple, stats["pairs"])) == [("a", "b", 2), ("a", "c", 2), ("b", "c", 2)]
    # Train has 9 images: a 4, b 3, c 3, d 1.
    assert stats["negatives_per_positive"] == {"a": 1.25, "b": 2.0, "c": 2.0, "d": 8.0}
    assert report["images"]["train"] == {"a": 4, "b": 3, "c": 3, "d": 1}
    assert [s["option"] for s in report["suggestions"] if s["option"] in ("data.sampler", "model.pos_weight")] == []
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "labels per image: min 0, mean 1.154, max 3" in table
    assert "images with no label: 3 (train 2, val 0, test 1)" in table


def test_a_labels_file_with_no_label_at_all_is_warned_about_in_its_own_terms(tmp_path: Path, capsys) -> None:
    from litstarter.extras.inspect.command import main

    root = tmp_path / "pool"
    for i in range(20):
        write_image(root / f"{i:02d}.png", seed=i)
    (root / "labels.csv").write_text("path,labels\n" + "".join(f"{i:02d}.png,\n" for i in range(20)))
    args = ["--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), f"--data.init_args.root={root}",
            "--data.init_args.labels=labels.csv", f"--data.init_args.cache_dir={tmp_path / 'cache'}"]  # fmt: skip
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "has 0 label(s)" in err and "rows of data.labels" in err and "folder" not in err, err


def test_the_table_names_the_first_files_of_a_check_and_json_all_of_them() -> None:
    from litstarter.extras.inspect.command import NAMED_FILES, render_quality

    files = [f"train/dark_{i:04d}.png" for i in range(3000)]
    quality = {"dark": {"what": "very dark", "files": files}, "blurry": {"what": "blurry", "files": files[:2]}}
    lines = render_quality(quality)
    assert lines[0] == "very dark: 3000"
    assert lines[1 : 1 + NAMED_FILES] == [f"  {f}" for f in files[:NAMED_FILES]]
    assert lines[1 + NAMED_FILES] == f"  ... and {3000 - NAMED_FILES} more (--json lists them all)"
    assert lines[2 + NAMED_FILES :] == ["blurry: 2", f"  {files[0]}", f"  {files[1]}"]
