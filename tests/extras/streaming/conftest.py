"""The converted folders the streaming tests share: ``optimize`` has a start-up of seconds, so each runs once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import CONFIGS, DEFAULT_CONFIG, FOLDER_CONFIG, write_digit_photos, write_mask_folder

pytest.importorskip("litdata")


def folder_args(root: Path, cache_dir: Path, *extra: str) -> list[str]:
    """The data arguments a fit of the photo folder takes (optimize takes the same)."""
    return ["--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), "--data.root", str(root),
            f"--data.init_args.cache_dir={cache_dir}", "--data.image_size", "24", *extra]  # fmt: skip


def optimize(args: list[str]) -> int:
    """``litstarter optimize ARGS`` in this process (its exit code; a refusal prints one line on stderr)."""
    from litstarter.__main__ import main

    return main(["optimize", *args])


@pytest.fixture(scope="session")
def converted(tmp_path_factory) -> dict:
    """A 48-image digit-photo folder (4 classes, mixed sizes, JPEG and PNG) converted to shards once:
    ``{"root", "cache_dir", "output", "args"}`` (``args``: the data arguments, without ``--output``). Read-only."""
    tmp = tmp_path_factory.mktemp("streaming")
    root = write_digit_photos(tmp / "photos", {"": [12] * 4}, sizes=(28, 40))
    args = folder_args(root, tmp / "cache")
    assert optimize([*args, "--output", str(tmp / "shards")]) == 0
    return {"root": root, "cache_dir": tmp / "cache", "output": tmp / "shards", "args": args}


@pytest.fixture(scope="session")
def converted_boxes(tmp_path_factory) -> dict:
    """40 digit canvases (64 px, 1 to 4 boxes each) as COCO json, converted to shards once (train 28, val 6, test
    6): ``{"root", "output", "task"}`` (``task``: what a fit from the shards adds to default.yaml). Read-only."""
    pytest.importorskip("faster_coco_eval")
    from litstarter.data.digit_boxes import write_canvases, write_coco

    tmp = tmp_path_factory.mktemp("streaming_boxes")
    root = tmp / "coco"
    write_coco(root, write_canvases(root, 40, seed=4))
    task = ["--config", str(CONFIGS / "task" / "detection.yaml")]
    args = [*folder_args(root, tmp / "cache"), *task, "--data.image_size", "64"]
    assert optimize([*args, "--output", str(tmp / "shards")]) == 0
    return {"root": root, "output": tmp / "shards", "task": [*task, "--model.overlays=0"]}


@pytest.fixture(scope="session")
def converted_masks(tmp_path_factory) -> dict:
    """40 digit canvases with their masks (as :func:`~tests.helpers.write_mask_folder` writes them) converted to
    shards at 32 px once (train 28, val 6, test 6): ``{"root", "output", "task"}`` as :func:`converted_boxes`."""
    tmp = tmp_path_factory.mktemp("streaming_masks")
    root = write_mask_folder(tmp / "masks", 40)
    task = ["--config", str(CONFIGS / "task" / "segmentation.yaml")]
    args = [*folder_args(root, tmp / "cache"), *task, "--data.image_size", "32"]
    assert optimize([*args, "--output", str(tmp / "shards")]) == 0
    return {"root": root, "output": tmp / "shards", "task": [*task, "--model.overlays=0"]}
