"""Segmentation masks and numeric labels as users send them, through the real CLI: 0/255 masks without
``data.binary_masks`` train their foreground (said in one line); JPEG masks, an ``ignore_index`` that is a class, a
mask cell leading out of ``data.root``, a target beyond float32 and a stray number in a 0/1 label column are each
refused in one line naming the cause, before anything is cached."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.helpers import CONFIGS, FOLDER_CONFIG, assert_refused, fast_fit_args, run_cases

pytestmark = pytest.mark.slow

SEGMENTATION = CONFIGS / "task" / "segmentation.yaml"


def write_masks(root: Path, images: int = 24, suffix: str = ".png", foreground: int = 255) -> Path:
    """``root/images/<i>.png`` (a bright block on a dark ground) beside ``root/masks/<i><suffix>`` (the block as
    ``foreground`` on 0), no classes.txt."""
    rng = np.random.default_rng(0)
    for folder in ("images", "masks"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for i in range(images):
        mask = np.zeros((32, 32), dtype=np.uint8)
        top, left = rng.integers(0, 16, 2)
        mask[top : top + 8 + i % 8, left : left + 10] = foreground
        picture = np.where(mask > 0, 190, 50) + rng.integers(0, 40, mask.shape)
        Image.fromarray(picture.astype(np.uint8)).save(root / "images" / f"{i}.png")
        Image.fromarray(mask).save(root / "masks" / f"{i}{suffix}", **({"quality": 75} if suffix == ".jpg" else {}))
    return root


def fit(tmp_path: Path, root: Path, *extra: str, task: Path = SEGMENTATION, epochs: int = 1) -> list[str]:
    return [
        *fast_fit_args(tmp_path / "runs", epochs, root.name, configs=[FOLDER_CONFIG, task]),
        f"--data.root={root}",
        f"--data.init_args.cache_dir={tmp_path / 'cache'}",
        "--data.init_args.image_size=32",
        "--data.init_args.batch_size=8",
        *extra,
    ]


def test_masks_of_0_and_255_train_their_foreground_and_one_line_says_they_are_binary(tmp_path: Path) -> None:
    root = write_masks(tmp_path / "binary")
    (result,) = run_cases(tmp_path, [{"argv": fit(tmp_path, root, epochs=3)}])
    output = result["stdout"] + result["stderr"]
    assert result["code"] == 0, output[-3000:]
    notes = [line for line in output.splitlines() if "read as binary masks" in line]
    assert len(notes) == 1 and "data.binary_masks: false" in notes[0], output[-3000:]
    metrics = json.loads(next((tmp_path / "runs" / "binary").rglob("metrics.json")).read_text())
    test = metrics.get("test", metrics)
    iou = next(value for key, value in test.items() if key.endswith("iou/foreground"))
    assert iou > 0.2, test  # the foreground was learnt, not ignored (0.0 when 255 was ignore_index)


def test_bad_masks_and_labels_are_refused_in_one_line_naming_the_cause(tmp_path: Path) -> None:
    jpeg = write_masks(tmp_path / "jpeg", images=12, suffix=".jpg")
    index = write_masks(tmp_path / "index", images=12, foreground=1)
    (index / "classes.txt").write_text("road\nlane\n")
    rows = ["image,mask", *(f"images/{i}.png,masks/{i}.png" for i in range(1, 12)), "images/0.png,../secret.png"]
    (index / "pairs.csv").write_text("\n".join(rows) + "\n")
    ages = [f"images/{i}.png,{i}" for i in range(11)] + ["images/11.png,3.9e39"]
    (index / "ages.csv").write_text("\n".join(["path,age", *ages]) + "\n")
    flags = [f"images/{i}.png,{i % 2},{(i // 2) % 2}" for i in range(11)] + ["images/11.png,2,1"]
    (index / "flags.csv").write_text("\n".join(["path,cat,dog", *flags]) + "\n")
    regression, multilabel = CONFIGS / "task" / "regression.yaml", CONFIGS / "task" / "multilabel.yaml"
    cases = [
        fit(tmp_path, jpeg),
        fit(tmp_path, index, "--data.init_args.ignore_index=1"),
        fit(tmp_path, index, "--data.init_args.labels=pairs.csv"),
        fit(tmp_path, index, "--data.init_args.labels=ages.csv", task=regression),
        fit(tmp_path, index, "--data.init_args.labels=flags.csv", task=multilabel),
    ]
    results = run_cases(tmp_path, [{"argv": argv} for argv in cases])
    expected = [
        (1, "mask 'masks/0.jpg' is a JPEG", "save masks as PNG"),
        (2, "data.ignore_index is 1, the index of class 'lane'"),
        (1, "pairs.csv", "line 13 mask '../secret.png' (leaves data.root)"),
        (1, "ages.csv' line 13: column 'age' is '3.9e39', beyond the float32 range"),
        (2, "flags.csv' line 13: column 'cat' is 2, where", "0 or 1"),
    ]
    for result, (code, *named) in zip(results, expected, strict=True):
        assert_refused(result, code, *named)
    assert not list((tmp_path / "cache").rglob("*.u8"))  # refused before anything was cached
