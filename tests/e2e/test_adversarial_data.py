"""Hostile folders through the real CLI: folder-link loops never multiply the data; names that aren't UTF-8,
dangling links and file-link loops go through on_bad_file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from litstarter.__main__ import main as litstarter_main
from litstarter._engine.images.manifest import as_records
from tests.helpers import CONFIGS, DEFAULT_CONFIG, ODD_NAME, make_hostile_folder, run_litstarter

pytestmark = pytest.mark.slow

ODD = ODD_NAME


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    return make_hostile_folder(tmp_path_factory.mktemp("hostile") / "root")


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
