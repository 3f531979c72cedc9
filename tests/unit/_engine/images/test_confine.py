"""Nothing a label file names is read from outside data.root: one check (``confine``) for every reader, by the
spelling, before any file is opened; a link inside the root may still lead elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from litstarter._engine.images import confine as confine_module
from litstarter._engine.images.confine import NAMED, confine, outside_root
from litstarter.data import ImageFolderDataModule
from litstarter.data.digit_boxes import write_box_csv, write_canvases, write_coco, write_yolo
from litstarter.errors import BadInputError

#: The sentence every reader's refusal shares: the one check behind them all.
SHARED = "A path must be relative to data.root and stay inside it once normalised"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("a/../b.png", None), ("./a//b.png", None), (".", None), ("..", "leaves data.root"),
        ("../x.png", "leaves data.root"), ("a/../../x.png", "leaves data.root"), ("..\\x.png", "leaves data.root"),
        ("/etc/passwd", "absolute"), ("C:\\x.png", "absolute"), ("\\\\server\\x.png", "absolute"),
        ("a\0.png", "NUL byte"),
    ],
)  # fmt: skip
def test_a_name_is_judged_by_its_normalised_spelling(name: str, why: str | None) -> None:
    assert outside_root(name) == why
    if why == "absolute":
        assert outside_root(name, allow_absolute=True) is None


def test_names_relative_to_a_folder_inside_the_root_may_climb_back_to_the_root_and_no_further() -> None:
    assert confine("'data.yaml'", Path("/r"), [("key train", "../images/train")], base="sub") == ["images/train"]
    with pytest.raises(BadInputError, match=r"key train '../../x' \(leaves data.root\)"):
        confine("'data.yaml'", Path("/r"), [("key train", "../../x")], base="sub")


def test_every_entry_outside_is_named_in_one_line_the_rest_counted() -> None:
    entries = [(f"line {n}", f"../{n}.png") for n in range(NAMED + 3)] + [("line 99", "fine.png")]
    with pytest.raises(BadInputError) as refused:
        confine("data.labels 'x.csv'", Path("/r"), entries)
    message = str(refused.value)
    assert message.startswith(f"data.labels 'x.csv': {NAMED + 3} row(s) name a file outside data.root '/r'")
    assert "line 0 '../0.png' (leaves data.root)" in message and "and 3 more" in message and "\n" not in message
    assert "line 99" not in message and SHARED in message and "no listed file was opened" in message


def hostile_roots(tmp: Path) -> dict[str, tuple[Path, dict]]:
    """Each reader's file naming ``../outside/secret.png`` (or an absolute path): ``{reader: (root, options)}``."""
    outside = tmp / "outside"
    outside.mkdir()
    Image.new("L", (64, 64)).save(outside / "secret.png")
    roots = {}
    for reader in ("labels", "masks", "boxes", "coco", "yolo_key", "yolo_list"):
        root = tmp / reader
        written = write_canvases(root, 12, seed=1)
        options = {"labels": "labels.csv"}
        if reader == "labels":
            rows = [f"{p},{int(b[0][4])}" for p, _, b in written] + ["../outside/secret.png,1"]
            (root / "labels.csv").write_text("\n".join(["path,label", *rows]) + "\n")
        elif reader == "masks":
            rows = [f"{p},{p}" for p, _, _ in written] + [f"{written[0][0]},../outside/secret.png"]
            (root / "labels.csv").write_text("\n".join(["image,mask", *rows]) + "\n")
        elif reader == "boxes":
            write_box_csv(root, written, name="labels.csv")
            with open(root / "labels.csv", "a") as f:
                f.write("../outside/secret.png,1,1,5,5,0,train\n")
        elif reader == "coco":
            write_coco(root, written)
            path = root / "annotations" / "instances_train.json"
            data = json.loads(path.read_text())
            data["images"][0]["file_name"] = str(outside / "secret.png")
            path.write_text(json.dumps(data))
            options = {}
        else:
            write_yolo(root, written)
            config = (root / "data.yaml").read_text()
            if reader == "yolo_key":
                config = config.replace("val: images/val", "val: ../outside")
            else:
                (root / "train.txt").write_text("./images/train/0000.png\n../outside/secret.png\n")
                config = config.replace("train: images/train", "train: train.txt")
            (root / "data.yaml").write_text(config)
            options = {}
        roots[reader] = (root, options)
    return roots


def test_every_reader_refuses_through_the_one_check_before_opening_anything(tmp_path: Path, monkeypatch) -> None:
    """Labels CSV, mask pairs, boxes CSV, COCO, YOLO's keys and list files: each refusal is the shared check's,
    raised before an image is opened and before the cache folder exists."""
    checked = []
    real = confine_module.outside_root
    monkeypatch.setattr(confine_module, "outside_root", lambda name, *a: checked.append(name) or real(name, *a))
    opened = []
    real_open = Image.open
    monkeypatch.setattr(Image, "open", lambda path, *a, **k: opened.append(str(path)) or real_open(path, *a, **k))
    for reader, (root, options) in hostile_roots(tmp_path).items():
        checked.clear(), opened.clear()
        with pytest.raises(BadInputError) as refused:
            ImageFolderDataModule(str(root), cache_dir=str(tmp_path / "cache" / reader), **options).load_cache()
        message = str(refused.value)
        assert SHARED in message and "outside" in message and "\n" not in message, (reader, message)
        assert checked and not opened, (reader, opened)
        assert not (tmp_path / "cache" / reader).exists(), reader


def test_a_folder_link_inside_the_root_may_lead_elsewhere(tmp_path: Path) -> None:
    """The documented rule: only the spelling counts; ``images`` may be a link to another disk's folder."""
    elsewhere = tmp_path / "disk"
    written = write_canvases(elsewhere, 12, seed=2)
    for form, write in (("coco", write_coco), ("yolo", write_yolo)):
        root = tmp_path / form
        root.mkdir()
        (root / "images").symlink_to(elsewhere / "images", target_is_directory=True)
        write(root, written)
        dm = ImageFolderDataModule(str(root), image_size=64, crop_pct=1.0, cache_dir=str(tmp_path / f"c-{form}"))
        assert sum(len(dm.load_cache().column(s, "path")) for s in ("train", "val", "test")) == 12, form
