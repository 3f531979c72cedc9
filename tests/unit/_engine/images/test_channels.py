"""data.channels: auto: 1 channel for all-grey data, else 3, from headers alone; resolved at construction."""

from __future__ import annotations

import logging
from pathlib import Path

from litstarter._engine.images.channels import channels_for, read_headers
from litstarter.data import ImageFolderDataModule
from tests.helpers import write_image


def test_grey_modes_give_one_channel_and_any_colour_gives_three(tmp_path: Path) -> None:
    grey = [write_image(tmp_path / f"g{i}.png", mode=mode) for i, mode in enumerate(["L", "LA", "I;16", "1"])]
    grey.append(write_image(tmp_path / "g.jpg", mode="L"))
    assert channels_for(read_headers(grey)[0])[0] == 1
    assert channels_for(read_headers([*grey, write_image(tmp_path / "c.png", mode="RGBA")])[0])[0] == 3
    assert channels_for(read_headers([*grey, write_image(tmp_path / "p.png", mode="P")])[0])[0] == 3
    assert channels_for(read_headers([])[0])[0] == 3


def test_only_the_header_is_read(tmp_path: Path) -> None:
    """A JPEG cut after its header still counts as grey: nothing past the header is decoded."""
    whole = write_image(tmp_path / "whole.jpg", size=(64, 64), mode="L").read_bytes()
    (tmp_path / "cut.jpg").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "text.png").write_text("not an image")
    modes, _ = read_headers([tmp_path / "cut.jpg", tmp_path / "text.png"])
    assert modes == {"L": 1}


def test_auto_is_resolved_and_logged_when_the_module_is_built(tmp_path: Path, caplog) -> None:
    for i, mode in enumerate(["L", "I;16", "LA"] * 2):
        write_image(tmp_path / "root" / ("a" if i % 2 else "b") / f"{i}.png", mode=mode)
    with caplog.at_level(logging.INFO):
        dm = ImageFolderDataModule(str(tmp_path / "root"), cache_dir=str(tmp_path / "cache"))
    assert dm.channels == 1  # what the CLI links into model.in_channels
    assert "data.channels: auto -> 1: all 6 images are grey" in caplog.text
    assert not (tmp_path / "cache").exists()  # headers only: nothing decoded or cached yet
