"""Hostile or broken annotations in the box formats added beside COCO, YOLO and the boxes CSV, through the real CLI:
each is one ``litstarter fit: error:`` line naming the file and the entry, exit 1, no traceback, and no cache written:
a VOC ``<filename>`` or a CVAT ``name`` outside data.root, a VOC file with an entity (the billion laughs), a missing
image, a LabelMe or Label Studio file that does not parse, CVAT for video, a TensorFlow CSV header mistyped, a folder
holding two formats, and class folders given to the detection task (named as none of its formats, never as class
folders). One subprocess runs every command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.box_sets import pictures, write
from tests.helpers import CONFIGS, DEFAULT_CONFIG, assert_refused, run_cases

pytestmark = pytest.mark.slow
LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
    '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><annotation><filename>&lol3;</filename></annotation>'
)


def replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def hostile_sets(tmp: Path) -> dict[str, tuple[Path, list[str]]]:
    """``{probe: (root, what its one line must name)}``."""
    shown, sets = pictures(12, seed=4), {}

    def made(name: str, form: str) -> Path:
        write(form, tmp / name, shown)
        return tmp / name

    root = made("voc_escape", "voc")
    replace(root / "annotations/train/0001.xml", "<filename>0001.png", "<filename>../../../../etc/passwd")
    sets["voc_escape"] = (root, ["Pascal VOC", "annotations/train/0001.xml <filename> '../../../../etc/passwd'"])
    root = made("voc_laughs", "voc")
    (root / "annotations/train/0002.xml").write_text(LAUGHS)
    sets["voc_laughs"] = (root, ["annotations/train/0002.xml: declares a DTD or an entity"])
    root = made("voc_missing", "voc")
    (root / "images/train/0003.png").unlink()
    sets["voc_missing"] = (root, ["annotations/train/0003.xml: <filename> '0003.png' is not found in images/train/"])
    root = made("cvat_escape", "cvat")
    replace(root / "annotations.xml", 'name="0000.png"', 'name="/etc/passwd"')
    sets["cvat_escape"] = (root, ["annotations.xml'", "image 0 '/etc/passwd' (absolute)"])
    root = made("cvat_video", "cvat")
    (root / "annotations.xml").write_text(
        '<annotations><track id="0" label="bar"><box frame="0"/></track></annotations>'
    )
    sets["cvat_video"] = (root, ["annotations.xml' is CVAT for video 1.1", "CVAT for images 1.1"])
    root = made("labelme_broken", "labelme")
    (root / "train" / "0001.json").write_text('{"version": "5.4.1", "shapes": [')
    sets["labelme_broken"] = (root, ["train/0001.json: does not parse as JSON"])
    root = made("label_studio_broken", "label_studio")
    next(root.glob("*.json")).write_text('[{"id": 1, "data": {"image": ')
    sets["label_studio_broken"] = (root, ["project-1-at-", "does not parse as JSON"])
    root = made("tf_header", "tf_csv")
    replace(root / "train" / "_annotations.csv", "xmin", "x_min")
    sets["tf_header"] = (root, ["train/_annotations.csv", "lacks ['xmin'] and has ['x_min'] instead"])
    root = made("two_formats", "coco")
    write("yolo", root, shown)
    sets["two_formats"] = (root, ["holds boxes in 2 formats", "data.box_format: coco or data.box_format: yolo"])
    root = tmp / "class_folders"
    for p in shown:
        (root / ("bar" if p.boxes[0][4] == 0 else "other")).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp / "voc_escape" / "images" / p.split / p.name, root / ("bar" if p.boxes[0][4] == 0 else "other"))
    sets["class_folders"] = (root, ["holds none of the box formats ObjectDetector reads", "Pascal VOC XML ("])
    return sets


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("hostile_box_formats")
    sets = hostile_sets(tmp)
    folder = ["--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml")]
    task = ["--config", str(CONFIGS / "task" / "detection.yaml")]
    cases = [
        {"argv": ["fit", *folder, *task, "--data.root", str(root),
                  f"--data.init_args.cache_dir={tmp / 'cache' / probe}", "--trainer.max_epochs=1"]}
        for probe, (root, _) in sets.items()
    ]  # fmt: skip
    outcome = dict(zip(sets, run_cases(tmp, cases, timeout=900), strict=True))
    return {"sets": sets, "outcome": outcome, "tmp": tmp}


PROBES = [
    "voc_escape", "voc_laughs", "voc_missing", "cvat_escape", "cvat_video", "labelme_broken", "label_studio_broken",
    "tf_header", "two_formats", "class_folders",
]  # fmt: skip


@pytest.mark.parametrize("probe", PROBES)
def test_each_hostile_annotation_is_one_line_exit_1_and_nothing_cached(results, probe: str) -> None:
    _, named = results["sets"][probe]
    message = assert_refused(results["outcome"][probe], 1, *named)
    assert "class folder" not in message, message
    assert not (results["tmp"] / "cache" / probe).exists()


def test_no_label_studio_url_reaches_outside_the_data_folder(tmp_path) -> None:
    """An upload URL is matched by its base name among data.root's images: ``../`` in it reads nothing outside."""
    from litstarter._engine.images.layout import detect_layout

    root = tmp_path / "root"
    write("label_studio_min", root, pictures(6, seed=1))
    (tmp_path / "secret.png").write_bytes((root / "images" / "train" / "0000.png").read_bytes())
    path = next(root.glob("*.json"))
    tasks = json.loads(path.read_text())
    tasks[0]["image"] = "/data/upload/1/../../../secret.png"
    path.write_text(json.dumps(tasks))
    layout = detect_layout(root)
    assert all(str(p).startswith(str(root)) for p, _, _ in layout.annotated.images)
    assert "matches no image under data.root (by the name 'secret.png')" in layout.annotated.problems[0]
