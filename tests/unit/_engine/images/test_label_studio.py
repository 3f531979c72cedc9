"""Label Studio's JSON and JSON-MIN exports: upload URLs (``/data/upload/1/<8 hex>-<name>``) matched by base name
inside data.root, the latest annotation that is not cancelled read, a task nobody annotated left out and counted,
percentages of ``original_width`` x ``original_height`` (checked against the image), a rotated rectangle and a
polygon read as the boxes around them; each bad task one line naming the export and the task, or skipped; a URL can
never reach outside data.root."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from litstarter._engine.images.layout import detect_layout
from tests.box_sets import CLASSES, pictures, refusal, skipped, write

SHOWN = pictures(12, seed=3)
FIRST = CLASSES[SHOWN[0].boxes[0][4]]
FULL = "project-1-at-2024-05-03-10-00-5f2c8e1a.json"


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[str, Path]:
    """12 pictures as Label Studio's full JSON and JSON-MIN exports. Copy before editing."""
    tmp = tmp_path_factory.mktemp("label_studio")
    for form in ("label_studio", "label_studio_min"):
        write(form, tmp / form, SHOWN)
    return {"full": tmp / "label_studio", "min": tmp / "label_studio_min"}


def edited(source: Path, tmp_path: Path, edit) -> tuple[Path, Path]:
    root = shutil.copytree(source, tmp_path / "root")
    path = next(root.glob("*.json"))
    tasks = json.loads(path.read_text())
    edit(tasks)
    path.write_text(json.dumps(tasks))
    return root, path


def latest(tasks: list, i: int = 0) -> list:
    """Task ``i``'s latest annotation's results (the writer puts it second)."""
    return tasks[i]["annotations"][1]["result"]


def test_both_exports_read_the_latest_annotation_by_name_with_the_prefix_stripped(exports) -> None:
    for kind, root in exports.items():
        layout = detect_layout(root)
        assert layout.form == "label_studio" and layout.class_names == list(CLASSES), kind
        got = {p.name: (s, b) for p, s, b in layout.annotated.images}
        assert got == {p.name: (p.split, [list(b) for b in p.boxes]) for p in SHOWN}, kind  # to 0.01 px: DECIMALS


def test_an_unannotated_task_is_left_out_and_counted_an_empty_annotation_is_a_negative(exports, tmp_path) -> None:
    def edit(tasks: list) -> None:
        tasks[0]["annotations"] = [{**tasks[0]["annotations"][1], "was_cancelled": True}]
        tasks[1]["annotations"][1]["result"] = []

    root, _ = edited(exports["full"], tmp_path, edit)
    layout = detect_layout(root)
    boxes = {p.name: b for p, _, b in layout.annotated.images}
    assert "0000.png" not in boxes and boxes["0001.png"] == []
    assert "1 Label Studio task(s) nobody annotated left out (unlabelled, not negatives)" in layout.describe(root)


def test_local_files_and_cloud_urls_match_by_name_a_rotated_box_and_a_polygon_are_boxes_around_them(exports, tmp_path):
    def edit(tasks: list) -> None:
        tasks[0]["data"]["image"] = "/data/local-files/?d=shapes/images/0000.png"
        tasks[1]["data"]["image"] = "s3://bucket/shapes/0001.png"
        result = latest(tasks)
        result[0]["value"] |= {"x": 25.0, "y": 50.0, "width": 12.5, "height": 10.0, "rotation": 90}
        result.append(
            {"id": "p", "type": "polygonlabels", "original_width": 80, "original_height": 60,
             "value": {"points": [[10, 10], [50, 20], [30, 50]], "polygonlabels": ["dot"]}}
        )  # fmt: skip

    root, _ = edited(exports["full"], tmp_path, edit)
    layout = detect_layout(root)
    boxes = {p.name: b for p, _, b in layout.annotated.images}
    assert "0001.png" in boxes
    assert boxes["0000.png"][0][:4] == [14, 30, 20, 40]  # 10 x 6 px at (20, 30), turned 90 degrees about (20, 30)
    assert boxes["0000.png"][-1] == [8, 6, 40, 30, 1]
    assert "1 Label Studio polygon(s) read as the box around them" in layout.describe(root)


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda t: t[0]["data"].update(image="/data/upload/1/0badc0de-gone.png"),
         "task 1: '/data/upload/1/0badc0de-gone.png' matches no image under data.root (by the name"
         " '0badc0de-gone.png' or 'gone.png')"),
        (lambda t: t[0]["data"].update(image="/data/upload/1/../../../../etc/passwd"),
         "task 1: '/data/upload/1/../../../../etc/passwd' matches no image under data.root (by the name 'passwd')"),
        (lambda t: latest(t)[0]["value"].update(rectanglelabels=[]),
         "task 1 region 0: labels [] (a box has one class)"),
        (lambda t: latest(t)[0]["value"].update(rectanglelabels=["bar", "dot"]),
         "task 1 region 0: labels ['bar', 'dot'] (a box has one class)"),
        (lambda t: latest(t)[0]["value"].update(x=95.0), "task 1 region 0 ["),
        (lambda t: latest(t)[0]["value"].update(x="left"), f"task 1 region 0 ({FIRST}): x, y, width, height ['left'"),
        (lambda t: latest(t)[0].update(original_width=800),
         "task 1: states the size 800x60 but 'images/train/0000.png'"),
    ],
)  # fmt: skip
def test_each_bad_task_is_one_line_naming_the_export_and_the_task_or_skipped(exports, tmp_path, edit, why) -> None:
    root, path = edited(exports["full"], tmp_path, edit)
    message = refusal(root, tmp_path / "cache")
    assert message.startswith(f"'{path}': 1 bad box(es) or annotation(s): {FULL} {why}"), message
    _, said = skipped(root, tmp_path / "skip")
    assert f"left out 1 bad box(es) (data.on_bad_box: skip): {FULL} task 1" in said, said


def test_a_name_two_images_share_is_a_bad_annotation(exports, tmp_path) -> None:
    root = shutil.copytree(exports["full"], tmp_path / "root")
    shutil.copy(root / "images" / "train" / "0000.png", root / "images" / "val" / "0000.png")
    assert f"{FULL} task 1: '/data/upload/1/" in refusal(root, tmp_path / "cache")
    assert "matches 2 images by name: ['images/train/0000.png', 'images/val/0000.png']" in refusal(root, tmp_path / "c")


@pytest.mark.parametrize(
    ("text", "why"),
    [('[{"id": 1, "data": ', "does not parse as JSON"), ('[{"id": 1, "data": {}}, 3]', "is not a Label Studio export")],
)  # fmt: skip
def test_an_export_that_does_not_parse_is_refused_whatever_on_bad_box_says(exports, tmp_path, text, why) -> None:
    root = shutil.copytree(exports["min"], tmp_path / "root")
    path = next(root.glob("*.json"))
    path.write_text(text)
    assert refusal(root, tmp_path / "cache", on_bad_box="skip").startswith(f"'{path}' {why}")


def test_two_exports_in_the_folder_are_refused_naming_data_labels_which_reads_one(exports, tmp_path) -> None:
    root = shutil.copytree(exports["min"], tmp_path / "root")
    shutil.copy(exports["full"] / FULL, root / FULL)
    assert "holds 2 Label Studio exports" in refusal(root, tmp_path / "cache")
    assert detect_layout(root, FULL).form == "label_studio"
