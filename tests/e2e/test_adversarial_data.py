"""Issue 17 items 2 and 8 through the real CLI: folder-link loops never multiply the data; names that aren't
UTF-8, dangling links and file-link loops go through on_bad_file in fit and get a row each in infer."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from litstarter.__main__ import main as litstarter_main
from litstarter._engine.images.manifest import as_records
from litstarter.extras.deploy import infer
from tests.helpers import CONFIGS, DEFAULT_CONFIG, MIXED_IMAGES, make_image_folder, run_litstarter, write_image

pytestmark = pytest.mark.slow

ODD = os.fsdecode(b"caf\xe9.png")  # Latin-1 bytes: not valid UTF-8


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """18 images in 3 classes, plus ``loop -> ..``, ``self -> .``, a link to a sibling class, an image whose
    name isn't UTF-8, a dangling link and a file-link loop."""
    root = make_image_folder(tmp_path_factory.mktemp("hostile") / "root", {"a": 6, "b": 6, "c": 6}, **MIXED_IMAGES)
    os.symlink("..", root / "a" / "loop")
    os.symlink(".", root / "b" / "self")
    os.symlink("../a", root / "c" / "to_a")
    write_image(root / "c" / ODD, size=(30, 20))
    os.symlink("gone.png", root / "b" / "dangling.png")
    os.symlink("spin.png", root / "c" / "spin.png")
    return root


def fit_args(root: Path, tmp_path: Path, on_bad_file: str) -> list[str]:
    return [
        "fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
        "--data.root", str(root), f"--data.init_args.on_bad_file={on_bad_file}",
        f"--data.init_args.cache_dir={tmp_path / 'cache'}", "--data.init_args.num_workers=0",
        "--data.init_args.image_size=16", "--data.init_args.val_fraction=0.2", "--trainer.max_epochs=1",
        f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def skipped_fit(hostile: Path, tmp_path_factory) -> tuple[Path, object]:
    tmp_path = tmp_path_factory.mktemp("skip_fit")
    return tmp_path, run_litstarter(fit_args(hostile, tmp_path, "skip"), check=False)


def test_link_loops_dont_multiply_the_data_and_bad_names_are_skipped_under_skip(hostile, skipped_fit) -> None:
    tmp_path, proc = skipped_fit
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    (manifest_path,) = (tmp_path / "cache").glob("*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    files = [(f["path"], f["label"]) for split in manifest["splits"].values() for f in as_records(split["files"])]
    # 18 images + the one with the odd name: nothing through the links, nothing twice, every label its folder's.
    assert len(files) == len({p for p, _ in files}) == 19
    assert sorted({p.split("/")[0] for p, _ in files}) == ["a", "b", "c"]
    assert all(manifest["class_to_idx"][p.split("/")[0]] == label for p, label in files)
    assert f"c/{ODD}" in {p for p, _ in files}
    assert sorted(s["path"] for s in manifest["skipped"]) == ["b/dangling.png", "c/spin.png"]
    said = proc.stdout + proc.stderr
    assert "did not follow 3 folder link(s)" in said
    assert f"data: layout {hostile}/<class>/<image>; train 12 (the rest of each class), val 4" in said, said[-3000:]


def test_under_error_the_dangling_link_and_the_link_loop_are_named_in_one_message(hostile, tmp_path, capsys) -> None:
    """Through the entry point in this process (a second CLI process would cost ~20 s of imports)."""
    assert litstarter_main(fit_args(hostile, tmp_path, "error")) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    message = err[err.index("litstarter fit: error:") :]
    assert "2 image file(s)" in message
    assert "b/dangling.png: dangling symbolic link (its target 'gone.png' does not exist)" in message
    assert "c/spin.png: symbolic link loop" in message
    assert "caf" not in message  # the odd name is a good image


def test_infer_gives_every_file_a_row_and_writes_the_csv_whatever_the_names(hostile, skipped_fit, capsys) -> None:
    tmp_path, _ = skipped_fit
    (ckpt,) = (tmp_path / "runs").glob("*/version_0/checkpoints/last.ckpt")
    output = tmp_path / "preds.csv"
    rc = infer.main(["--model", str(ckpt), "--input", str(hostile), "--output", str(output)])
    assert rc == 1  # some files could not be read
    with open(output, newline="", encoding="utf-8") as f:  # valid UTF-8 whatever the names
        rows = {Path(r["file"]).relative_to(hostile).as_posix(): r for r in csv.DictReader(f)}
    assert len(rows) == 21  # 18 + the odd name + dangling + loop; nothing through the folder links
    assert rows["c/caf\\xe9.png"]["pred"] in ("a", "b", "c") and not rows["c/caf\\xe9.png"]["error"]
    assert rows["b/dangling.png"]["error"].startswith("dangling symbolic link")
    assert rows["c/spin.png"]["error"].startswith("symbolic link loop")
    assert "did not follow 3 folder link(s)" in capsys.readouterr().err
