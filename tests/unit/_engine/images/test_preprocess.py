"""Torch-free preprocessing: every PIL mode to 8-bit L/RGB, exact sizes, no wrap-around."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from litstarter._engine.images.preprocess import center_crop_array, is_image_file, load_image, resize_size_for


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "P", "CMYK", "I;16", "I", "F", "LA", "1"])
@pytest.mark.parametrize("channels", [1, 3])
def test_every_mode_converts_to_the_requested_channels_and_size(tmp_path: Path, mode: str, channels: int) -> None:
    path = tmp_path / ("x.tiff" if mode in ("I;16", "I", "F", "CMYK") else "x.png")
    Image.new(mode, (40, 30)).save(path)
    array = load_image(path, channels, resize_size_for(16))
    assert array.dtype == np.uint8 and array.shape == (channels, 18, 18)


def test_32_bit_values_saturate_instead_of_wrapping(tmp_path: Path) -> None:
    path = tmp_path / "wide.tiff"
    Image.fromarray(np.full((8, 8), 200_000, dtype=np.int32), mode="I").save(path)
    assert load_image(path, 1, (8, 8)).min() == 255  # uint8 wrap-around would give 778 % 256 = 10


def test_16_bit_uses_the_full_range(tmp_path: Path) -> None:
    path = tmp_path / "deep.png"
    Image.fromarray(np.full((8, 8), 32768, dtype=np.uint16)).save(path)
    assert abs(int(load_image(path, 1, (8, 8))[0, 0, 0]) - 128) <= 1


def test_hidden_and_non_image_files_are_not_images() -> None:
    assert is_image_file("a/b/cat.JPG") and not is_image_file(".DS_Store") and not is_image_file("notes.txt")
    assert not is_image_file("a/.hidden.png")


def test_center_crop_matches_the_eval_arithmetic() -> None:
    array = np.arange(11 * 11).reshape(1, 11, 11)
    assert center_crop_array(array, (8, 8))[0, 0, 0] == array[0, 1, 1]  # top = (11 - 8) // 2


def test_the_module_imports_no_torch() -> None:
    import subprocess

    code = "import sys, litstarter._engine.images.preprocess; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.strip()
    assert out == "False"
