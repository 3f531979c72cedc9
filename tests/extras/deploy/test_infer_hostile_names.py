"""infer on a hostile folder: every file gets a row and the CSV is valid UTF-8 whatever the names; folder links are
listed once, where they really are; a file given twice is one input."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from litstarter.extras.deploy import infer
from tests.helpers import CONFIGS, DEFAULT_CONFIG, make_hostile_folder, run_cli

pytestmark = pytest.mark.slow  # end to end


@pytest.fixture(scope="module")
def hostile_fit(tmp_path_factory) -> tuple[Path, Path]:
    """The hostile folder and a checkpoint trained on it (bad files skipped)."""
    tmp_path = tmp_path_factory.mktemp("hostile_infer")
    root = make_hostile_folder(tmp_path / "root")
    run_cli([
        "fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
        "--data.root", str(root), "--data.init_args.on_bad_file=skip", f"--data.init_args.cache_dir={tmp_path}",
        "--data.init_args.num_workers=0", "--data.init_args.image_size=16", "--data.init_args.val_fraction=0.2",
        "--trainer.max_epochs=1", "--test_after_fit=false", f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
    ])  # fmt: skip
    (ckpt,) = (tmp_path / "runs").glob("*/version_0/checkpoints/last.ckpt")
    return root, ckpt


def test_infer_gives_every_file_a_row_and_writes_the_csv_whatever_the_names(hostile_fit, tmp_path, capsys) -> None:
    hostile, ckpt = hostile_fit
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


def test_a_file_given_again_by_name_or_inside_another_input_folder_is_listed_once(tmp_path: Path) -> None:
    """Named again, inside a folder given again or nested in another input, a hard link in another input, a
    dangling link named twice: one input each, under the first name met, and a note for each."""
    (tmp_path / "d" / "sub").mkdir(parents=True)
    for name in ("d/a.png", "d/sub/b.png", "elsewhere.png"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "d" / "sub" / "gone.png").symlink_to("nothing.png")
    os.link(tmp_path / "elsewhere.png", tmp_path / "d" / "hard.png")
    given = ["d/a.png", "d", "d/sub", "d", "elsewhere.png", "d/sub/gone.png", "./d/sub/gone.png", "d//a.png"]
    files, _, notes = infer.list_inputs([tmp_path / g for g in given])
    assert [f.relative_to(tmp_path).as_posix() for f in files] == ["d/a.png", "d/hard.png", "d/sub/b.png",
                                                                  "d/sub/gone.png"]  # fmt: skip
    said = "\n".join(notes)
    assert f"{tmp_path}/d/a.png (again)" in said  # the folder's a.png, after a.png by name
    assert f"{tmp_path}/elsewhere.png (= {tmp_path}/d/hard.png)" in said
    assert f"given again (or a folder inside another --input folder): {tmp_path}/d/sub, {tmp_path}/d" in said
    assert f"{tmp_path}/d/sub/gone.png" in said.split("given again")[1]
