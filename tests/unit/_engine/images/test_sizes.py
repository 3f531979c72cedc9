"""data.image_size: auto: the median short side, snapped and bounded, from headers alone; resolved at construction."""

from __future__ import annotations

import logging
from pathlib import Path

from litstarter._engine.images.sizes import AUTO_SIDES, auto_side
from litstarter.data import ImageFolderDataModule
from tests.helpers import write_image


def test_the_median_short_side_is_snapped_and_bounded() -> None:
    assert auto_side([(28, 28)] * 5)[0] == 32  # below the lower bound: raised to it
    assert auto_side([(60, 90), (90, 58), (500, 57)])[0] == 56  # short sides 60, 58, 57 -> median 58 -> 56
    assert auto_side([(100, 100), (70, 300), (76, 76)])[0] == 80  # a portrait's short side is its width
    assert auto_side([(640, 480)] * 3)[0] == AUTO_SIDES[1]  # photos: capped at 224
    side, reason = auto_side([])
    assert side == AUTO_SIDES[1] and "no image header" in reason


def test_auto_is_resolved_from_headers_and_logged_when_the_module_is_built(tmp_path: Path, caplog) -> None:
    """Sizes and modes come from one pass over the headers; the resolved size sets the cache's stored size."""
    sizes = [(40, 52), (44, 60), (40, 40), (64, 48), (300, 41), (41, 41)]  # (h, w): short sides 40-48, median 41
    for i, size in enumerate(sizes):
        write_image(tmp_path / "root" / ("a" if i % 2 else "b") / f"{i}.png", size=size, mode="L")
    with caplog.at_level(logging.INFO):
        dm = ImageFolderDataModule(str(tmp_path / "root"), image_size="auto", cache_dir=str(tmp_path / "cache"))
    assert dm.image_size == (40, 40)  # what the CLI links into the model, never "auto"
    assert dm.resize_size == (46, 46)  # the crop room follows the resolved size
    assert dm.channels == 1
    assert "data.image_size: auto -> 40: the median short side of 6 images is 41 px" in caplog.text
    assert not (tmp_path / "cache").exists()  # headers only: nothing decoded or cached yet
