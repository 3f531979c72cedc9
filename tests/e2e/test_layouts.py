"""Your own data, end to end: every layout fits, bad files stop or skip cleanly, and a
labels CSV gives what the same images in folders give. Real JPEG and PNG files of mixed sizes and modes."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from litstarter.__main__ import main as litstarter_main
from litstarter._engine.images.manifest import as_records
from tests.helpers import CONFIGS, DEFAULT_CONFIG, MIXED_IMAGES, make_image_folder, run_cli, write_image

pytestmark = pytest.mark.slow

FOLDER_CONFIG = str(CONFIGS / "data" / "image_folder.yaml")
COUNTS = {"ant": 10, "bee": 10, "cat": 5}


def fit_args(root: Path, tmp_path: Path, name: str, *extra: str, epochs: int = 1) -> list[str]:
    """A short image-folder fit whose run and cache land under ``tmp_path``."""
    return [
        "fit", "--config", str(DEFAULT_CONFIG), "--config", FOLDER_CONFIG, "--data.root", str(root),
        f"--data.init_args.cache_dir={tmp_path / 'cache'}", "--data.init_args.num_workers=0",
        "--data.init_args.image_size=16", "--data.init_args.batch_size=8", f"--trainer.max_epochs={epochs}",
        f"--trainer.logger.init_args.save_dir={tmp_path}", f"--trainer.logger.init_args.name={name}",
        *extra,
    ]  # fmt: skip


def split_files(cli) -> dict[str, list[tuple[str, int]]]:
    """``{split: [(path, label)]}`` as cached."""
    manifest = cli.datamodule.cache.manifest
    return {s: [(f["path"], f["target"]) for f in as_records(e["files"])] for s, e in manifest["splits"].items()}


def build(root: Path, splits: dict[str, dict[str, int]], grey: bool = False) -> Path:
    for i, (split, counts) in enumerate(splits.items()):
        make_image_folder(root / split if split else root, counts, **MIXED_IMAGES, seed=i, mode="L" if grey else None)
    return root


LAYOUTS = {  # name: (folders {split folder: counts}, expected {split: per-class counts}, test split, layout text)
    # 10 images: 2 val (0.2), 1 test (0.1); 5 images: 1 val, 1 test (every non-zero fraction gets one)
    "classes": ({"": COUNTS}, {"train": [7, 7, 3], "val": [2, 2, 1], "test": [1, 1, 1]}, "test", ""),
    "train_val_test": (
        {"train": COUNTS, "val": {c: 2 for c in COUNTS}, "test": {c: 3 for c in COUNTS}},
        {"train": [10, 10, 5], "val": [2, 2, 2], "test": [3, 3, 3]}, "test", "{train,val,test}",
    ),
    "train_test_aliases": (
        {"Training": COUNTS, "TESTING": {c: 3 for c in COUNTS}},
        {"train": [8, 8, 4], "val": [2, 2, 1], "test": [3, 3, 3]}, "test", "{Training,TESTING}",
    ),
    "train_val_grey": (
        {"train": COUNTS, "validation": {c: 2 for c in COUNTS}},
        {"train": [10, 10, 5], "val": [2, 2, 2]}, "val", "{train,validation}",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_every_layout_splits_right_and_fits_end_to_end(name: str, tmp_path: Path, caplog) -> None:
    folders, expected, test_split, layout_text = LAYOUTS[name]
    grey = name.endswith("grey")
    root = build(tmp_path / name, folders, grey=grey)
    extra = ["--data.init_args.val_fraction=0.2", "--data.init_args.test_fraction=0.1"]
    with caplog.at_level(logging.INFO):
        cli = run_cli(fit_args(root, tmp_path, f"run_{name}", *extra))
    files = split_files(cli)
    per_class = {s: [Counter(label for _, label in f)[c] for c in range(3)] for s, f in files.items()}
    assert per_class == expected
    paths = [p for f in files.values() for p, _ in f]
    assert len(paths) == len(set(paths))  # no file in two splits
    assert all(Path(p).parts[-2] == cli.datamodule.class_names[label] for f in files.values() for p, label in f)
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("data: layout"))
    assert f"{root}{'/' + layout_text if layout_text else ''}/<class>/<image>" in line
    assert all(f"{s} {sum(n)} (" in line for s, n in expected.items())
    assert cli.model.hparams.in_channels == (1 if grey else 3)  # data.channels: auto, linked into the model
    metrics = json.loads((tmp_path / f"run_{name}" / "version_0" / "metrics.json").read_text())
    assert metrics["test_split"] == test_split and 0.0 <= metrics["test/acc"] <= 1.0
    if test_split == "val":
        assert "no test split: test-after-fit tests on val" in line
    augmentation = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("data: training aug"))
    assert "no flips" in augmentation and "inverted" not in augmentation  # both opt-in


@pytest.fixture
def bad_train_test(tmp_path: Path) -> Path:
    """``train/`` at 10:1 and a balanced ``test/``, with three bad files and two files to ignore."""
    root = tmp_path / "bad"
    make_image_folder(root / "train", {"common": 40, "rare": 4}, **MIXED_IMAGES, seed=1)
    make_image_folder(root / "test", {"common": 4, "rare": 4}, **MIXED_IMAGES, seed=2)
    (root / "train" / "common" / "zero.jpg").write_bytes(b"")
    whole = write_image(root / "train" / "rare" / "cut.jpg", size=(48, 48)).read_bytes()
    (root / "train" / "rare" / "cut.jpg").write_bytes(whole[: len(whole) // 2])
    (root / "test" / "common" / "text.png").write_text("this is not a PNG")
    (root / "train" / "common" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    (root / "train" / "notes.txt").write_text("collected in 2024")
    return root


def test_bad_files_under_error_are_one_message_and_under_skip_the_balanced_fit_finishes(
    bad_train_test: Path, tmp_path: Path, capsys
) -> None:
    # Through the entry point in this process: a CLI subprocess would add ~20 s of imports (the real-process
    # case of the same message is tests/e2e/test_adversarial_data.py's skip fit and harden's CLI cases).
    assert litstarter_main(fit_args(bad_train_test, tmp_path, "bad_error")) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    message = err[err.index("litstarter fit: error:") :]
    assert message.startswith("litstarter fit: error: 3 image file(s) under")
    for bad in ("zero.jpg", "cut.jpg", "text.png"):
        assert bad in message
    assert ".DS_Store" not in message and "notes.txt" not in message
    assert len(message.splitlines()) <= 6  # the sentence, the three files, what to do

    skip = ["--data.init_args.on_bad_file=skip", "--data.init_args.sampler=balanced"]
    cli = run_cli(fit_args(bad_train_test, tmp_path, "bad_skip", *skip))
    assert len(cli.datamodule.cache.skipped) == 3
    metrics = json.loads((tmp_path / "bad_skip" / "version_0" / "metrics.json").read_text())
    assert metrics["test_split"] == "test" and "test/f1_macro" in metrics


RUNS = ("folders", "csv")


def test_a_labels_csv_gives_the_splits_and_accuracy_of_the_same_folders(tmp_path: Path) -> None:
    root = make_image_folder(
        tmp_path / "same", COUNTS, **{**MIXED_IMAGES, "noise": 90.0}, seed=5
    )  # noisy: accuracy below 1
    rows = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.*"))
    (root / "labels.csv").write_text("path,label\n" + "".join(f"{p},{p.split('/')[0]}\n" for p in rows))
    folders = run_cli(fit_args(root, tmp_path, "folders", epochs=2))
    from_csv = run_cli(fit_args(root, tmp_path, "csv", "--data.init_args.labels=labels.csv", epochs=2))
    assert split_files(from_csv) == split_files(folders)
    metrics = [json.loads((tmp_path / n / "version_0" / "metrics.json").read_text()) for n in RUNS]
    # Same files, same order, same seed: the same run, so the same test accuracy (and loss).
    assert metrics[0]["test/acc"] == pytest.approx(metrics[1]["test/acc"], abs=0.05)
    assert metrics[0]["test/loss"] == pytest.approx(metrics[1]["test/loss"], rel=1e-3)
