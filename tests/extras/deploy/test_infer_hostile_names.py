"""infer on a hostile folder: every file gets a row and the CSV is valid UTF-8 whatever the names; folder links are
listed once, where they really are."""

from __future__ import annotations

import csv
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
