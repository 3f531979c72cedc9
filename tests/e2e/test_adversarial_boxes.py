"""Hostile box annotations through the real CLI: each is one ``litstarter fit: error:`` line naming the file and the
entry, exit 1, no traceback, and no cache written: a COCO ``file_name`` or a YOLO key outside data.root, an image id
or a category name given twice, a boxes CSV's empty label, NaN coordinate or mistyped header. A YOLO list file
(``train: train.txt``) is read. One subprocess runs every command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import CONFIGS, DEFAULT_CONFIG, assert_refused, run_cases

pytestmark = pytest.mark.slow


def coco_edit(root: Path, edit) -> None:
    path = root / "annotations" / "instances_train.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def csv_edit(root: Path, line: int, column: int, value: str, header: str | None = None) -> None:
    lines = (root / "boxes.csv").read_text().splitlines()
    fields = lines[line - 1].split(",")
    fields[column] = value
    lines[line - 1] = ",".join(fields)
    lines[0] = header or lines[0]
    (root / "boxes.csv").write_text("\n".join(lines) + "\n")


def yaml_edit(root: Path, old: str, new: str) -> None:
    (root / "data.yaml").write_text((root / "data.yaml").read_text().replace(old, new))


def hostile_sets(tmp: Path) -> dict[str, tuple[Path, list[str], list[str]]]:
    """``{probe: (root, extra arguments, what its one line must name)}``."""
    from litstarter.data.digit_boxes import write_box_csv, write_canvases, write_coco, write_yolo

    base = tmp / "base"
    written = write_canvases(base, 12, seed=2)
    outside = tmp / "outside"
    shutil.copytree(base / "images" / "train", outside)
    sets = {}

    def copy(name: str, write) -> Path:
        root = shutil.copytree(base, tmp / name)
        write(root, written)
        return root

    root = copy("coco_escape", write_coco)
    names = ["../outside/0000.png", str(outside / "0001.png"), "/etc/passwd"]
    coco_edit(root, lambda d: [image.update(file_name=n) for image, n in zip(d["images"], names, strict=False)])
    sets["coco_escape"] = (root, [], ["instances_train.json", "3 image(s)", *(f"'{n}'" for n in names), "image 2"])
    root = copy("coco_id_twice", write_coco)
    coco_edit(root, lambda d: d["images"][1].update(id=d["images"][0]["id"]))
    sets["coco_id_twice"] = (root, [], ["instances_train.json", "image id 0", "0000.png", "0001.png"])
    root = copy("coco_name_twice", write_coco)
    coco_edit(root, lambda d: d["categories"][1].update(name="0"))
    sets["coco_name_twice"] = (root, [], ["instances_train.json", "category name '0'", "ids 1 and 2"])
    for probe, old, new in [
        ("yolo_path_absolute", "train:", f"path: {base}\ntrain:"),
        ("yolo_path_up", "train:", "path: ../base\ntrain:"),
        ("yolo_train_absolute", "train: images/train", f"train: {base}/images/train"),
        ("yolo_val_up", "val: images/val", "val: ../base/images/val"),
    ]:
        root = copy(probe, write_yolo)
        yaml_edit(root, old, new)
        key = new.split(":")[0]
        sets[probe] = (root, [], ["data.yaml", f"key {key} '{new.split(': ')[1].splitlines()[0]}'"])
    csv = ["--data.labels", "boxes.csv"]
    root = copy("csv_empty_label", write_box_csv)
    csv_edit(root, 3, 5, "")
    sets["csv_empty_label"] = (root, csv, ["boxes.csv", "line 3 column label: empty"])
    root = copy("csv_nan", write_box_csv)
    csv_edit(root, 3, 2, "nan")
    sets["csv_nan"] = (root, csv, ["boxes.csv", "line 3 column y1: 'nan' is not a finite number"])
    root = copy("csv_header_typo", write_box_csv)
    csv_edit(root, 1, 4, "y_2")
    sets["csv_header_typo"] = (root, csv, ["boxes.csv", "lacks ['y2'] and has ['y_2'] instead", "path,x1,y1,x2,y2"])
    return sets


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    from litstarter.data.digit_boxes import write_canvases, write_yolo

    tmp = tmp_path_factory.mktemp("hostile_boxes")
    sets = hostile_sets(tmp)
    listed = tmp / "yolo_list"
    write_yolo(listed, write_canvases(listed, 12, seed=2))
    lines = sorted(f"./{p.relative_to(listed).as_posix()}" for p in (listed / "images" / "train").glob("*.png"))
    (listed / "train.txt").write_text("\n".join(lines) + "\n")
    yaml_edit(listed, "train: images/train", "train: train.txt")
    folder = ["--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml")]
    task = ["--config", str(CONFIGS / "task" / "detection.yaml")]
    cases = [
        {"argv": ["fit", *folder, *task, "--data.root", str(root), *extra,
                  f"--data.init_args.cache_dir={tmp / 'cache' / probe}", "--trainer.max_epochs=1"]}
        for probe, (root, extra, _) in sets.items()
    ]  # fmt: skip
    cases.append({"argv": ["inspect", *folder, "--data.root", str(listed)]})
    outcome = dict(zip([*sets, "yolo_list"], run_cases(tmp, cases, timeout=900), strict=True))
    return {"sets": sets, "outcome": outcome, "tmp": tmp}


PROBES = [
    "coco_escape", "coco_id_twice", "coco_name_twice", "yolo_path_absolute", "yolo_path_up", "yolo_train_absolute",
    "yolo_val_up", "csv_empty_label", "csv_nan", "csv_header_typo",
]  # fmt: skip


@pytest.mark.parametrize("probe", PROBES)
def test_each_hostile_annotation_is_one_line_exit_1_and_nothing_cached(results, probe: str) -> None:
    _, _, named = results["sets"][probe]
    assert_refused(results["outcome"][probe], 1, *named)
    assert not (results["tmp"] / "cache" / probe).exists()


def test_a_yolo_list_file_is_read(results) -> None:
    result = results["outcome"]["yolo_list"]
    assert result["code"] == 0, result["stderr"][-3000:]
    assert "yolo boxes" in result["stdout"] + result["stderr"] and "12 images" in result["stdout"] + result["stderr"]
