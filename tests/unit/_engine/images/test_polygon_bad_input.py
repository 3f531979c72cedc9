"""Bad input in each polygon format read for masks: a polygon of fewer than 3 points, an image the file names that is
missing, a file that does not parse, a path that leaves the data folder and a shape outside its image. Each is one line
naming the file and the entry, nothing cached; under ``data.on_bad_box: skip`` the bad shapes are left out and counted
in one line (a file that does not parse or names a path outside the folder is refused whatever it says)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.polygon_sets import pictures, refusal, skipped, write

pytestmark = pytest.mark.filterwarnings("ignore:data leakage:UserWarning")  # the drawn canvases look alike
SHOWN = pictures(12, seed=4)
FIRST = next(p for p in SHOWN if p.split == "train")  # the picture every edit below touches


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """The 12 pictures in each polygon format. Copy before editing."""
    tmp = tmp_path_factory.mktemp("bad_polygons")
    return {form: tmp / form for form in ("labelme", "cvat", "coco_polygons") if not write(form, tmp / form, SHOWN)}


def edited(source: Path, tmp_path: Path, relative: str, edit: Callable[[str], str]) -> Path:
    root = tmp_path / "root"
    shutil.copytree(source, root)
    path = root / relative
    text = path.read_text()
    changed = edit(text)
    assert changed != text, f"the edit changed nothing in {relative}"
    path.write_text(changed)
    return root


def labelme(name: str) -> str:
    return f"train/{Path(name).with_suffix('.json')}"


def labelme_edit(change: Callable[[dict], None]) -> Callable[[str], str]:
    def edit(text: str) -> str:
        data = json.loads(text)
        change(data)
        return json.dumps(data)

    return edit


def coco_edit(change: Callable[[dict], None]) -> Callable[[str], str]:
    return labelme_edit(change)


def _first_image(data: dict) -> dict:
    return next(i for i in data["images"] if i["file_name"] == FIRST.name)


def _first_annotation(data: dict) -> dict:
    return next(a for a in data["annotations"] if a["image_id"] == _first_image(data)["id"])


def _set(target: dict, key: str, value) -> None:
    target[key] = value


# (format, file, edit, what the one line says after naming the file)
SHAPES = [
    ("labelme", labelme(FIRST.name), labelme_edit(lambda d: _set(d["shapes"][0], "points", [[1, 1], [5, 5]])),
     "a (polygon|rectangle) of 2 point\\(s\\)|a polygon of 2 point"),
    ("labelme", labelme(FIRST.name), labelme_edit(lambda d: _set(d["shapes"][0], "points", [[1, 1], [500, 1], [1, 9]])),
     "outside the 64x48 image"),
    ("cvat", "annotations.xml", lambda t: re.sub(rf'(<image id="\d+" name="{FIRST.name}"[^>]*>)',
                                               r'\1<polygon label="blob" points="1.00,1.00;5.00,5.00" z_order="9">'
                                               r"</polygon>", t, count=1),
     "a polygon of 2 point\\(s\\) \\(it needs 3\\)"),
    ("coco_polygons", "annotations/instances_train.json",
     coco_edit(lambda d: _set(_first_annotation(d), "segmentation", [[1, 1, 5, 5]])),
     "a polygon of 2 point\\(s\\) \\(it needs 3\\)"),
]  # fmt: skip


@pytest.mark.parametrize(("form", "relative", "edit", "why"), SHAPES, ids=[f"{s[0]}-{i}" for i, s in enumerate(SHAPES)])
def test_a_bad_shape_is_one_line_naming_the_file_and_shape_or_skipped_and_counted(
    folders, tmp_path, form, relative, edit, why
) -> None:
    root = edited(folders[form], tmp_path, relative, edit)
    message = refusal(root, tmp_path / "cache")
    assert "1 bad shape(s) or annotation(s)" in message and re.search(why, message), message
    assert Path(relative).name in message, message
    dm, said = skipped(root, tmp_path / "skip")
    assert "left out 1 bad shape(s) (data.on_bad_box: skip)" in said and re.search(why, said), said


MISSING = [
    ("labelme", labelme(FIRST.name), labelme_edit(lambda d: _set(d, "imagePath", "gone.png")), "'gone.png'"),
    ("cvat", "annotations.xml", lambda t: t.replace(f'name="{FIRST.name}"', 'name="gone.png"', 1), "'gone.png'"),
    ("coco_polygons", "annotations/instances_train.json",
     coco_edit(lambda d: _set(_first_image(d), "file_name", "gone.png")),
     "'gone.png' is not found"),
]  # fmt: skip


@pytest.mark.parametrize(("form", "relative", "edit", "why"), MISSING, ids=[m[0] for m in MISSING])
def test_an_image_the_file_names_that_is_missing_is_one_line_naming_it(folders, tmp_path, form, relative, edit, why):
    root = edited(folders[form], tmp_path, relative, edit)
    message = refusal(root, tmp_path / "cache")
    assert why in message and "not found" in message, message


UNPARSED = [
    ("labelme", labelme(FIRST.name), lambda t: t[: len(t) // 2]),
    ("cvat", "annotations.xml", lambda t: t.replace("</annotations>", "")),
    ("coco_polygons", "annotations/instances_train.json", lambda t: t[: len(t) // 2]),
]


@pytest.mark.parametrize(("form", "relative", "edit"), UNPARSED, ids=[u[0] for u in UNPARSED])
def test_a_file_that_does_not_parse_is_one_line_naming_it(folders, tmp_path, form, relative, edit) -> None:
    root = edited(folders[form], tmp_path, relative, edit)
    message = refusal(root, tmp_path / "cache")
    assert Path(relative).name in message, message


OUTSIDE = [
    ("cvat", "annotations.xml", lambda t: t.replace(f'name="{FIRST.name}"', 'name="../../outside.png"', 1)),
    ("coco_polygons", "annotations/instances_train.json",
     coco_edit(lambda d: _set(_first_image(d), "file_name", "/etc/passwd"))),
]  # fmt: skip


@pytest.mark.parametrize(("form", "relative", "edit"), OUTSIDE, ids=[o[0] for o in OUTSIDE])
def test_a_path_that_leaves_the_data_folder_is_refused_whatever_on_bad_box_says(
    folders, tmp_path, form, relative, edit
):
    root = edited(folders[form], tmp_path, relative, edit)
    message = refusal(root, tmp_path / "cache", on_bad_box="skip")
    assert "outside data.root" in message and Path(relative).name in message, message


def test_a_labelme_image_path_outside_the_folder_is_never_opened_its_base_name_beside_the_json_is(folders, tmp_path):
    root = edited(folders["labelme"], tmp_path, labelme(FIRST.name),
                  labelme_edit(lambda d: _set(d, "imagePath", f"C:\\Users\\me\\Desktop\\{FIRST.name}")))  # fmt: skip
    dm, said = skipped(root, tmp_path / "cache")
    assert said == "" and FIRST.name in {p.name for p, _, _ in dm.folder.layout.annotated.images}
