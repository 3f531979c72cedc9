"""Hostile folders through the real CLI: folder-link loops never multiply the data; names that aren't UTF-8,
dangling links and file-link loops go through on_bad_file; labels-file rows never lead out of data.root and name
each file once; a cache manifest edited by hand is rebuilt."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from litstarter.__main__ import main as litstarter_main
from litstarter._engine.images.manifest import as_records
from tests.helpers import (
    CONFIGS,
    DEFAULT_CONFIG,
    DROP_ROOT,
    ODD_NAME,
    assert_refused,
    make_hostile_folder,
    make_image_folder,
    run_cases,
    write_image,
)

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


def labels_root(tmp_path: Path) -> tuple[Path, Path]:
    """``root/img/{a,b}/00{0..5}.png``, ``root/linked_out.png`` -> a real image outside, ``root/img/b/alias.png`` ->
    ``../a/002.png``; outside the root, a FIFO (a reader blocks on it forever), an image nobody may read (mode 000)
    and the real image."""
    root = make_image_folder(tmp_path / "root" / "img", {"a": 6, "b": 6}).parent
    outside = tmp_path / "outside"
    write_image(outside / "real.png", seed=1)
    write_image(outside / "secret.png", seed=2).chmod(0)
    os.mkfifo(outside / "fifo.png")
    os.symlink(outside / "real.png", root / "linked_out.png")
    os.symlink("../a/002.png", root / "img" / "b" / "alias.png")
    return root, outside


def write_labels(root: Path, name: str, extra: list[str], split: bool = False) -> str:
    """``root/<name>``: every image under its folder's label (train 0-3, val 4-5 with ``split``), then ``extra``."""
    rows = [
        f"img/{c}/00{i}.png,{c}" + (f",{'train' if i < 4 else 'val'}" if split else "") for c in "ab" for i in range(6)
    ]
    (root / name).write_text("\n".join([f"path,label{',split' if split else ''}", *rows, *extra]) + "\n")
    return name


#: Labels-file rows that lead out of data.root (the CSV's lines 14-18).
OUT_OF_ROOT = [
    "../outside/secret.png,a",
    "img/../../outside/fifo.png,b",
    "/etc/passwd,a",
    "/etc,b",
    "{outside}/real.png,a",
]

#: Manifest values edited by hand into a built cache: a std of 0 (a NaN at step 0) and a plausible mean.
EDITS = {"std": lambda v: 0.0, "mean": lambda v: round(v - 0.05, 4)}


def edit_in_place(manifest_path: Path, key: str) -> list[float]:
    """Edit the top-level ``key`` of a manifest in its text, as an editor would (nothing else changes); return
    the value it had."""
    text = manifest_path.read_text()
    value = json.loads(text)[key]
    written = [EDITS[key](v) for v in value]
    edited = text.replace(
        f'"{key}": ' + json.dumps(value, indent=2).replace("\n", "\n  "),
        f'"{key}": ' + json.dumps(written, indent=2).replace("\n", "\n  "),
    )
    assert json.loads(edited)[key] == written != value
    manifest_path.write_text(edited)
    return value


@pytest.fixture(scope="module")
def runs(hostile: Path, tmp_path_factory) -> tuple[Path, dict, dict]:
    """Every subprocess fit of this module in ONE process, root's overrides dropped: the hostile folder under skip,
    the labels files, the edited manifests. Returns the folder, each case's result, and the edited values' truth."""
    from litstarter._engine.images.folder import CachedImageFolder

    tmp = tmp_path_factory.mktemp("adversarial_data")
    root, outside = labels_root(tmp)
    csvs = {
        "traversal": write_labels(root, "traversal.csv", [row.format(outside=outside) for row in OUT_OF_ROOT]),
        "dot": write_labels(root, "dot.csv", ["./img/a/000.png,b"]),
        "dotdot": write_labels(root, "dotdot.csv", ["img/b/../a/001.png,b"]),
        "link": write_labels(root, "link.csv", ["img/b/alias.png,b"]),
        "linked_out": write_labels(root, "linked_out.csv", ["linked_out.png,a,val"], split=True),
        "absolute": write_labels(root, "absolute.csv", [f"{outside}/real.png,a,val"], split=True),
    }
    argv = {"skip": fit_args(hostile, tmp / "skip", "skip")}  # first: Lightning's log lines go to the first's stderr
    argv |= {
        name: [*fit_args(root, tmp / name, "error"), f"--data.init_args.labels={csv}"] for name, csv in csvs.items()
    }
    argv["absolute"].append("--data.init_args.labels_absolute_paths=true")  # the documented opt-in
    truth = {}
    for key in EDITS:
        folder = make_image_folder(tmp / key / "root", {"a": 5, "b": 5})
        cached = CachedImageFolder(folder, image_size=16, val_fraction=0.2, cache_dir=tmp / key / "cache")
        truth[key] = edit_in_place(cached.load_or_build().folder / "manifest.json", key)  # the fit's own cache
        argv[key] = fit_args(folder, tmp / key, "error")
    results = run_cases(tmp, [{"argv": a} for a in argv.values()], prefix=DROP_ROOT, timeout=300)  # FIFO: no hang
    return tmp, dict(zip(argv, results, strict=True)), truth


def test_link_loops_dont_multiply_the_data_and_bad_names_are_skipped_under_skip(hostile, runs) -> None:
    tmp_path, results, _ = runs
    said = results["skip"]
    assert said["code"] == 0, said["stderr"][-3000:]
    assert "Traceback" not in said["stderr"]
    (manifest_path,) = (tmp_path / "skip" / "cache").glob("*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    files = [(f["path"], f["target"]) for split in manifest["splits"].values() for f in as_records(split["files"])]
    # 18 images + the one with the odd name: nothing through the links, nothing twice, every label its folder's.
    assert len(files) == len({p for p, _ in files}) == 19
    assert sorted({p.split("/")[0] for p, _ in files}) == ["a", "b", "c"]
    assert all(manifest["class_to_idx"][p.split("/")[0]] == label for p, label in files)
    assert f"c/{ODD}" in {p for p, _ in files}
    assert sorted(s["path"] for s in manifest["skipped"]) == ["b/dangling.png", "c/spin.png"]
    said = said["stdout"] + said["stderr"]
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


def test_labels_rows_leading_out_of_the_root_are_refused_before_any_is_opened(runs) -> None:
    """All five named in one sentence; the FIFO never blocked the run and the mode-000 file never became a
    'Permission denied' bad file: none was opened."""
    tmp_path, results, _ = runs
    rows = [row.format(outside=tmp_path / "outside").rsplit(",", 1)[0] for row in OUT_OF_ROOT]
    lines = [f"line {14 + i} '{row}'" for i, row in enumerate(rows)]
    message = assert_refused(results["traversal"], 1, "5 row(s) name a file outside data.root", *lines)
    assert "Permission denied" not in message and "could not be read" not in message


def test_one_file_under_two_spellings_is_refused_naming_both_rows_and_labels(runs) -> None:
    _, results, _ = runs
    assert_refused(results["dot"], 1, "line 2 'img/a/000.png' (label a)", "line 14 './img/a/000.png' (label b)")
    assert_refused(results["dotdot"], 1, "line 3 'img/a/001.png' (label a)", "line 14 'img/b/../a/001.png' (label b)")
    assert_refused(results["link"], 1, "line 4 'img/a/002.png' (label a)", "line 14 'img/b/alias.png' (label b)",
                   "twice under different paths")  # fmt: skip


@pytest.mark.parametrize("case", ["linked_out", "absolute"])
def test_a_link_inside_the_root_or_an_absolute_row_when_allowed_may_lead_out_and_keeps_its_split(runs, case) -> None:
    tmp_path, results, _ = runs
    said = results[case]
    assert said["code"] == 0, said["stderr"][-3000:]
    (manifest_path,) = (tmp_path / case / "cache").glob("*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    val = dict(zip(*(manifest["splits"]["val"]["files"][k] for k in ("path", "target")), strict=True))
    assert {split: entry["shape"][0] for split, entry in manifest["splits"].items()} == {"train": 8, "val": 5}
    row = "linked_out.png" if case == "linked_out" else str(tmp_path / "outside" / "real.png")
    assert val.pop(row) == manifest["class_to_idx"]["a"] and len(val) == 4
    assert row not in manifest["splits"]["train"]["files"]["path"]


@pytest.mark.parametrize(("key", "why"), [("std", "std should be a list of 3 numbers in [1e-09, 1]"),
                                          ("mean", "its digest does not match its contents")])  # fmt: skip
def test_a_hand_edited_mean_or_std_in_the_cache_manifest_means_a_rebuild(runs, key: str, why: str) -> None:
    """Edited in the manifest's text as an editor would: the fit rebuilds, says why, and trains on the true figures."""
    tmp_path, results, truth = runs
    said = results[key]
    assert said["code"] == 0 and "Traceback" not in said["stderr"], said["stderr"][-3000:]
    assert "manifest.json is malformed" in said["stderr"] and why in said["stderr"] and "rebuilding" in said["stderr"]
    (manifest_path,) = (tmp_path / key / "cache").glob("*/manifest.json")
    assert json.loads(manifest_path.read_text())[key] == truth[key]
