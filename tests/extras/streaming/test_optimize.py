"""``litstarter optimize``: the shards hold the cache's pixels, labels and ids; an unchanged source is skipped; a
non-empty output is refused in one line; a killed conversion leaves nothing that trains; the digits and a labels
CSV go through the same data module code as a fit."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
import torch

from litstarter.data import StreamingDataModule
from litstarter.errors import UsageError
from litstarter.extras.streaming.command import fit_data_module
from tests.extras.streaming.conftest import folder_args, optimize
from tests.helpers import DEFAULT_CONFIG


def stream_eval_view(output: Path | str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Every image of a shard split (of a folder or an ``s3://`` prefix) in its stored order, through the streaming
    module's eval view."""
    from litdata import StreamingDataLoader

    from litstarter.data.streaming_dataset import ImageBatch

    data = StreamingDataModule(str(output), num_workers=0)  # its split reader decodes --encoded shards too
    loader = StreamingDataLoader(data._split(split), batch_size=16, collate_fn=ImageBatch(data.image_size))
    images, labels = zip(*loader, strict=True)
    return torch.cat(images).numpy(), torch.cat(labels).numpy()


def stored_indices(output: Path | str, split: str) -> list[int]:
    """Each stored sample's index in the cache's split, in the stored order."""
    from litdata import StreamingDataset

    stored = StreamingDataset(f"{output}/{split}")
    return [int(stored[i]["index"]) for i in range(len(stored))]


def test_the_eval_view_through_the_shards_is_the_caches_byte_for_byte(converted) -> None:
    cached = fit_data_module(converted["args"])
    cached.prepare_data()
    cached.setup("fit")
    manifest = json.loads((converted["output"] / "shards.json").read_text())
    assert manifest["class_names"] == cached.class_names
    assert manifest["resize_size"] == list(cached.resize_size) and manifest["image_size"] == [24, 24]
    assert manifest["mean"] == pytest.approx(cached.normalization()[0])
    for split in ("train", "val", "test"):
        dataset = getattr(cached, f"{split}_set")
        order = stored_indices(converted["output"], split)
        assert sorted(order) == list(range(len(dataset)))
        # train in a seeded permutation (LitData's batches come from one chunk each: the cache's class-by-class
        # order would give each batch a few classes), val and test in the cache's order
        assert (order != sorted(order)) == (split == "train"), split
        expected_images, expected_labels = dataset.eval_view(np.asarray(order))
        images, labels = stream_eval_view(converted["output"], split)
        assert images.dtype == np.uint8 and images.shape == expected_images.shape, split
        assert images.tobytes() == expected_images.tobytes(), split
        assert labels.tolist() == expected_labels.tolist(), split
        assert manifest["splits"][split]["count"] == len(dataset)


def test_the_stored_ids_are_the_cached_files(converted) -> None:
    from litdata import StreamingDataset

    cached = fit_data_module(converted["args"])
    cache = cached.load_cache()
    stored = StreamingDataset(str(converted["output"] / "val"))
    assert [stored[i]["id"] for i in range(len(stored))] == cache.column("val", "path")


def test_an_unchanged_source_is_skipped(converted, capsys) -> None:
    before = {p: p.stat().st_mtime_ns for p in converted["output"].rglob("*")}
    assert optimize([*converted["args"], "--output", str(converted["output"])]) == 0
    assert "up to date" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in converted["output"].rglob("*")} == before


def test_a_non_empty_output_is_refused_in_one_line(converted, tmp_path: Path, capsys) -> None:
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("mine")
    assert optimize([*converted["args"], "--output", str(stray)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]  # beside the data's lines
    assert len(err) == 1 and "--overwrite" in err[0] and str(stray) in err[0], err
    assert (stray / "notes.txt").read_text() == "mine"
    # Shards of other parameters: refused too, then replaced whole with --overwrite.
    copy = tmp_path / "copy"
    shutil.copytree(converted["output"], copy)
    other = folder_args(converted["root"], converted["cache_dir"], "--data.image_size", "16")
    assert optimize([*other, "--output", str(copy)]) == 2
    assert "another source or parameters" in capsys.readouterr().err
    assert optimize([*other, "--output", str(copy), "--overwrite"]) == 0
    assert json.loads((copy / "shards.json").read_text())["image_size"] == [16, 16]
    assert not list(tmp_path.glob(".copy.*")), "the replaced shards or the temporary folder were left behind"


def optimize_killed_after_train(args: list[str]) -> int:
    """``optimize ARGS`` in a forked child of this process (no second start-up) that SIGKILLs itself once the train
    split is written, before val, test and the manifest; returns the signal that ended it."""
    from litstarter.extras.streaming import convert

    pid = os.fork()
    if pid == 0:  # the child: no hook, no finally and no pytest teardown run after the kill
        original = convert.optimize_split

        def optimize_then_die(split, output_dir, num_workers):
            original(split, output_dir, num_workers)
            os.kill(os.getpid(), signal.SIGKILL)

        convert.optimize_split = optimize_then_die
        try:
            optimize(args)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0


@pytest.mark.slow
def test_a_killed_conversion_leaves_nothing_that_trains_and_a_rerun_completes(converted, tmp_path: Path) -> None:
    target = tmp_path / "shards"
    args = [*converted["args"], "--output", str(target)]
    assert optimize_killed_after_train(args) == signal.SIGKILL
    (leftover,) = tmp_path.glob(".shards.*.tmp")  # the half-written dataset, under a name nothing reads
    assert (leftover / "train" / "index.json").is_file() and not (leftover / "shards.json").exists()
    assert not target.exists()
    for root in (target, leftover / "train", leftover):
        with pytest.raises(UsageError, match="no shards.json"):
            StreamingDataModule(str(root))
    assert optimize(args) == 0
    assert StreamingDataModule(str(target)).num_classes == 4
    assert not leftover.exists(), "the killed conversion's folder was not cleaned up"


def test_digits_and_a_labels_csv_convert_through_their_data_modules(converted, tmp_path: Path) -> None:
    from sklearn.datasets import load_digits

    assert optimize(["--config", str(DEFAULT_CONFIG), "--output", str(tmp_path / "digits")]) == 0
    digits = fit_data_module(["--config", str(DEFAULT_CONFIG)])
    digits.setup("fit")
    manifest = json.loads((tmp_path / "digits" / "shards.json").read_text())
    assert manifest["class_names"] == [str(d) for d in range(10)] and manifest["channels"] == 1
    assert {s: v["count"] for s, v in manifest["splits"].items()} == {
        s: len(getattr(digits, f"{s}_set")) for s in ("train", "val", "test")
    }
    images, labels = stream_eval_view(tmp_path / "digits", "test")
    assert images.tobytes() == digits.test_set.images.tobytes()
    expected = load_digits().target[digits.split_indices()["test"]]
    assert labels.tolist() == digits.test_set.targets.tolist() == expected.tolist()

    rows = ["path,label,split"] + [
        f"{p.relative_to(converted['root'])},{p.parent.name},{'val' if i % 4 == 0 else 'train'}"
        for i, p in enumerate(sorted(converted["root"].rglob("*.*")))
    ]
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    args = folder_args(converted["root"], converted["cache_dir"], "--data.labels", str(tmp_path / "labels.csv"))
    assert optimize([*args, "--output", str(tmp_path / "csv")]) == 0
    manifest = json.loads((tmp_path / "csv" / "shards.json").read_text())
    assert {s: v["count"] for s, v in manifest["splits"].items()} == {"train": 36, "val": 12}
    assert manifest["params"]["layout"] == "labels"
    assert StreamingDataModule(str(tmp_path / "csv")).test_split == "val"


def test_data_it_cannot_convert_is_refused_in_one_line(converted, tmp_path: Path, capsys) -> None:
    shards = ["--config", str(DEFAULT_CONFIG), "--data", "litstarter.data.StreamingDataModule",
              f"--data.root={converted['output']}"]  # fmt: skip
    assert optimize([*shards, "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if ": error: " in line]  # beside the cache's own log lines
    assert len(errors) == 1 and "StreamingDataModule" in errors[0] and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_label_sets_and_values_go_through_the_shards_as_the_cache_holds_them(converted, tmp_path: Path) -> None:
    files = sorted(p.relative_to(converted["root"]) for p in converted["root"].rglob("*.*"))
    (tmp_path / "tags.csv").write_text("path,labels\n" + "".join(f"{p},{p.parent.name};x\n" for p in files))
    rows = "".join(f"{p},{i * 0.25},{-i}\n" for i, p in enumerate(files))
    (tmp_path / "values.csv").write_text("path,Age,tilt\n" + rows)
    for name, kind in (("tags", "label_set"), ("values", "value")):
        args = folder_args(converted["root"], tmp_path / "cache", "--data.labels", str(tmp_path / f"{name}.csv"))
        assert optimize([*args, "--output", str(tmp_path / name)]) == 0
        cached = fit_data_module(args)
        cached.prepare_data()
        cached.setup("fit")
        manifest = json.loads((tmp_path / name / "shards.json").read_text())
        assert manifest["target_kind"] == kind == StreamingDataModule(str(tmp_path / name)).target_kind
        for split in ("train", "val", "test"):
            order = stored_indices(tmp_path / name, split)
            _, streamed = stream_eval_view(tmp_path / name, split)
            expected = getattr(cached, f"{split}_set").targets[np.asarray(order)]
            assert streamed.dtype == np.float32 and np.array_equal(streamed, expected), (name, split)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_output_over_above_or_inside_what_it_reads_is_refused_and_the_source_is_untouched(
    converted, tmp_path: Path, capsys
) -> None:
    work = tmp_path / "work"
    root = work / "photos"
    shutil.copytree(converted["root"], root)
    (work / "README").write_text("my notes")
    files = sorted(p.relative_to(root) for p in root.rglob("*.*"))
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "labels.csv").write_text("path,label\n" + "".join(f"{p},{p.parent.name}\n" for p in files))
    before = snapshot(tmp_path)
    cache = tmp_path / "cache"
    labelled = folder_args(root, cache, "--data.labels", str(tmp_path / "meta" / "labels.csv"))
    cases = [  # (the fit's arguments, --output, the key the line names, the relation)
        (folder_args(root, cache), root, "data.root", "is"),
        (folder_args(root, cache), work, "data.root", "contains"),
        (folder_args(root, cache), root / "shards", "data.root", "lies inside"),
        (folder_args(root, cache), cache, "data.cache_dir", "is"),
        (labelled, tmp_path / "meta", "data.labels", "contains"),
    ]
    for args, output, key, relation in cases:
        assert optimize([*args, "--output", str(output), "--overwrite"]) == 2, output
        err = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
        assert len(err) == 1 and f"{relation} {key}" in err[0] and str(output) in err[0], err
        assert snapshot(tmp_path) == before, f"--output {output} changed the files"
    assert not (root / "shards").exists() and not cache.exists()


def test_overwrite_replaces_only_shards_and_says_what_it_removes(converted, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(converted["output"], copy)
    (copy / "train" / "notes.txt").write_text("mine")
    other = folder_args(converted["root"], converted["cache_dir"], "--data.image_size", "16")
    assert optimize([*other, "--output", str(copy), "--overwrite"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert len(err) == 1 and "train/notes.txt" in err[0] and "not shards" in err[0], err
    assert (copy / "train" / "notes.txt").read_text() == "mine" and (copy / "shards.json").is_file()
    (copy / "train" / "notes.txt").unlink()
    assert optimize([*other, "--output", str(copy), "--overwrite"]) == 0
    (said,) = [line for line in capsys.readouterr().out.splitlines() if "--overwrite replaces" in line]
    assert "shards.json" in said and "train/ (" in said and "val/ (" in said, said
    assert json.loads((copy / "shards.json").read_text())["image_size"] == [16, 16]


@pytest.mark.slow
def test_masks_go_through_the_shards_and_keep_their_images_geometry(tmp_path: Path) -> None:
    from tests.helpers import FOLDER_CONFIG, write_mask_folder

    root = write_mask_folder(tmp_path / "pool", 24)
    args = ["--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), "--data.root", str(root),
            f"--data.init_args.cache_dir={tmp_path / 'cache'}", "--data.image_size", "48"]  # fmt: skip
    assert optimize([*args, "--output", str(tmp_path / "shards")]) == 0
    cached = fit_data_module(args)
    cached.prepare_data()
    cached.setup("fit")
    stream = StreamingDataModule(str(tmp_path / "shards"))
    assert stream.target_kind == "mask" and stream.ignore_index == 255
    for split in ("train", "val", "test"):
        order = np.asarray(stored_indices(tmp_path / "shards", split))
        images, masks = stream_eval_view(tmp_path / "shards", split)
        expected_images, expected_masks = getattr(cached, f"{split}_set").eval_view(order)
        assert masks.dtype == np.uint8 and np.array_equal(masks, expected_masks), split
        assert np.array_equal(images, expected_images), split
