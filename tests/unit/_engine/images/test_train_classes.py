"""A class (label) with nothing in the train split is said before training, in one line asked of the targets' kind
(``TargetKind.empty_warning``): a box class without a train box, a mask class without a train pixel
(test_mask_files.py) are warned about; a single-label class without a train image was refused already (an empty
class folder, a split missing a class); a multi-label label the fractions carve out of train is refused in one line
(it blamed ``data.on_bad_file=skip`` with no file skipped), and a 0/1 column no train row marks is said."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from litstarter.data import ImageFolderDataModule
from litstarter.data.digit_boxes import write_canvases, write_coco, write_yolo
from litstarter.errors import BadInputError
from tests.helpers import CONFIGS, DEFAULT_CONFIG, FOLDER_CONFIG, make_image_folder, run_cli
from tests.unit._engine.images.test_label_sets import NAMES, SETS, write_pool

TRAIN_SPLIT = "in the train split"


def module(root: Path, cache: Path, **options) -> ImageFolderDataModule:
    return ImageFolderDataModule(str(root), cache_dir=str(cache), num_workers=0, **options)


def said(caplog) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if TRAIN_SPLIT in r.getMessage() or "mark no train" in r.getMessage()
    ]


@pytest.fixture(scope="module")
def canvases(tmp_path_factory) -> list:
    """30 canvases' files and boxes (``write_canvases``), as COCO json and as YOLO, under one folder each."""
    tmp = tmp_path_factory.mktemp("canvases")
    roots = {"coco": tmp / "coco", "yolo": tmp / "yolo"}
    write_coco(roots["coco"], write_canvases(roots["coco"], 30, seed=3))
    write_yolo(roots["yolo"], write_canvases(roots["yolo"], 30, seed=3))
    return roots


def test_a_box_class_without_a_train_box_is_said_in_one_line(canvases, tmp_path: Path, caplog) -> None:
    """YOLO names a class no label file uses; COCO's train file lost every box of one category (val and test keep
    theirs): each fit would learn nothing of it."""
    yolo = shutil.copytree(canvases["yolo"], tmp_path / "yolo")
    (yolo / "data.yaml").write_text((yolo / "data.yaml").read_text() + "  10: 'unused'\n")
    coco = shutil.copytree(canvases["coco"], tmp_path / "coco")
    path = coco / "annotations" / "instances_train.json"
    data = json.loads(path.read_text())
    data["annotations"] = [a for a in data["annotations"] if a["category_id"] != 8]  # class '7'
    path.write_text(json.dumps(data))
    for root, missing in ((yolo, "['unused']"), (coco, "['7']")):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="litstarter"):
            module(root, tmp_path / "cache", image_size=64, crop_pct=1.0).load_cache()
        (line,) = said(caplog)
        assert line == (
            f"data.root '{root}': classes {missing} have no box in the train split: the fit cannot learn them and their"
            " scores are empty; check the annotations (a COCO category, a YOLO name or a CSV label that no train box"
            " has, or boxes data.on_bad_box: skip left out)"
        )


def test_no_line_when_every_box_class_is_in_train(canvases, tmp_path: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="litstarter"):
        module(canvases["coco"], tmp_path / "cache", image_size=64, crop_pct=1.0).load_cache()
    assert not said(caplog)


def test_a_label_the_fractions_carve_out_of_train_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    """'bird' is on 2 images of 10: val 0.5 and test 0.3 leave train none. It blamed data.on_bad_file=skip."""
    root = write_pool(tmp_path / "pool")
    dm = module(root, tmp_path / "cache", labels="labels.csv", image_size=16, val_fraction=0.5, test_fraction=0.3)
    with pytest.raises(BadInputError) as refused:
        dm.load_cache()
    message = str(refused.value)
    assert message.startswith(f"data.root '{root}': labels ['bird'] have no image {TRAIN_SPLIT}"), message
    assert "on_bad_file" not in message and "\n" not in message and "data.val_fraction" in message


def test_a_label_column_no_train_row_marks_is_said_in_one_line(tmp_path: Path, caplog) -> None:
    root = write_pool(tmp_path / "pool")
    lines = (root / "columns.csv").read_text().splitlines()
    (root / "zero.csv").write_text("\n".join([lines[0] + ",fish", *(f"{line},0" for line in lines[1:])]) + "\n")
    with caplog.at_level(logging.WARNING, logger="litstarter"):
        dm = module(root, tmp_path / "cache", labels="zero.csv", image_size=16)
    assert dm.class_names == NAMES and len(SETS) == len(lines) - 1
    (line,) = said(caplog)
    assert line == (
        f"data.labels '{root / 'zero.csv'}': label column(s) ['fish'] mark no train image (every cell 0): not labels"
        " of this fit, nothing can learn them; give them images, or drop the columns"
    )


@pytest.mark.parametrize("where", ["empty folder", "val only"])
def test_a_single_label_class_without_a_train_image_was_refused_already(tmp_path: Path, where: str) -> None:
    if where == "empty folder":
        root = make_image_folder(tmp_path / "root", {"a": 6, "b": 6})
        (root / "c").mkdir()
        match = r"1 class folder\(s\) hold no image files"
    else:
        root = make_image_folder(tmp_path / "root", {"a": 6, "b": 6, "c": 3})
        rows = [f"{p.relative_to(root).as_posix()},{p.parent.name},{'val' if p.parent.name == 'c' else 'train'}"
                for p in sorted(root.rglob("*.png"))]  # fmt: skip
        (root / "labels.csv").write_text("path,label,split\n" + "\n".join(rows) + "\n")
        match = r"split val lacks class\(es\) \['a', 'b'\] and has class\(es\) \['c'\] that train lacks"
    with pytest.raises(BadInputError, match=match):
        module(root, tmp_path / "cache", labels="labels.csv" if where == "val only" else None).load_cache()


@pytest.mark.slow
def test_a_detection_fit_says_it_before_training(canvases, tmp_path: Path, caplog) -> None:
    pytest.importorskip("faster_coco_eval")
    yolo = shutil.copytree(canvases["yolo"], tmp_path / "yolo")
    (yolo / "data.yaml").write_text((yolo / "data.yaml").read_text() + "  10: 'unused'\n")
    args = ["fit", "--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), "--config",
            str(CONFIGS / "task" / "detection.yaml"), f"--data.root={yolo}", f"--data.cache_dir={tmp_path / 'cache'}",
            "--data.image_size=64", "--data.num_workers=0", "--data.batch_size=8", "--trainer.max_epochs=1",
            "--trainer.limit_train_batches=1", "--trainer.limit_val_batches=1", "--test_after_fit=false",
            "--baseline=false", "--model.overlays=0", f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
            "--trainer.enable_progress_bar=false"]  # fmt: skip
    with caplog.at_level(logging.INFO):
        run_cli(args)
    messages = [r.getMessage() for r in caplog.records]
    (warned,) = [i for i, m in enumerate(messages) if "classes ['unused'] have no box in the train split" in m]
    assert warned < min(i for i, m in enumerate(messages) if m.startswith("batch plan"))  # before training
