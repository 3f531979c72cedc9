"""``litstarter optimize --encoded``: the shards hold the accepted files' bytes, decoded at train time by the
cache's own decode, so the eval and training views equal the uint8 shards'; the storage is part of the
fingerprint; data without files is refused in one line."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from litstarter.data import StreamingDataModule
from tests.extras.streaming.conftest import optimize
from tests.extras.streaming.test_optimize import stream_eval_view
from tests.helpers import DEFAULT_CONFIG


@pytest.fixture(scope="module")
def encoded(converted, tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("encoded") / "shards"
    assert optimize([*converted["args"], "--output", str(output), "--encoded"]) == 0
    return output


def train_views(output: Path) -> Counter:
    """The multiset of one epoch's augmented training images (bytes), seed 42, no workers."""
    data = StreamingDataModule(str(output), num_workers=0, batch_size=8)
    data.setup("fit")
    return Counter(image.numpy().tobytes() for images, _ in data.train_dataloader() for image in images)


def test_encoded_shards_give_the_uint8_shards_views(converted, encoded) -> None:
    assert json.loads((encoded / "shards.json").read_text())["storage"] == "encoded"
    for split in ("val",):
        ours, theirs = stream_eval_view(encoded, split), stream_eval_view(converted["output"], split)
        assert ours[0].tobytes() == theirs[0].tobytes() and (ours[1] == theirs[1]).all()
    assert train_views(encoded) == train_views(converted["output"])


def test_switching_storage_needs_overwrite(converted, encoded, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(encoded, copy)
    assert optimize([*converted["args"], "--output", str(copy)]) == 2
    assert "another source or parameters" in capsys.readouterr().err
    assert optimize([*converted["args"], "--output", str(copy), "--overwrite"]) == 0
    assert json.loads((copy / "shards.json").read_text())["storage"] == "uint8"


def test_digits_encoded_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    assert optimize(["--config", str(DEFAULT_CONFIG), "--output", str(tmp_path / "d"), "--encoded"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "image folder" in err[0], err


def test_a_file_removed_or_changed_while_stored_is_one_line_and_writes_nothing(
    converted, tmp_path: Path, monkeypatch, capsys
) -> None:
    from litstarter.extras.streaming import command, samples

    root = shutil.copytree(converted["root"], tmp_path / "photos")
    args = [*converted["args"], "--data.root", str(root), f"--data.init_args.cache_dir={tmp_path / 'cache'}"]
    files = sorted(p for p in root.rglob("*") if p.is_file())
    read_splits = command.read_splits

    def remove_after_the_cache_check(datamodule, encoded=False):
        files[0].unlink()
        return read_splits(datamodule, encoded)

    monkeypatch.setattr(command, "read_splits", remove_after_the_cache_check)
    assert optimize([*args, "--output", str(tmp_path / "a"), "--encoded"]) == 1
    assert f"{files[0]} was removed" in capsys.readouterr().err
    monkeypatch.setattr(command, "read_splits", read_splits)
    image, original = samples._image, files[1].read_bytes()

    def rewrite_while_stored(index, split):  # the writers are forked: they see this patch
        # The same bytes written over in place, never truncated: a writer reading it meanwhile sees it whole.
        fd = os.open(files[1], os.O_WRONLY)
        try:
            os.pwrite(fd, original, 0)
        finally:
            os.close(fd)
        return image(index, split)

    monkeypatch.setattr(samples, "_image", rewrite_while_stored)
    assert optimize([*args, "--output", str(tmp_path / "b"), "--encoded"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("nothing was written; run it again") and str(files[1]) in err[-1], err
    assert not (tmp_path / "b").exists() and not list(tmp_path.glob(".b.*"))
    monkeypatch.setattr(samples, "_image", image)
    assert optimize([*args, "--output", str(tmp_path / "b"), "--encoded"]) == 0
    assert json.loads((tmp_path / "b" / "shards.json").read_text())["storage"] == "encoded"
