"""One converted folder for every streaming test: ``optimize`` has a start-up of seconds, so it runs once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import DEFAULT_CONFIG, FOLDER_CONFIG, write_digit_photos

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
