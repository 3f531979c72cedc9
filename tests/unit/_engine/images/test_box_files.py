"""An image's size as shown, read from its header: a plain JPEG's frame header read directly gives what PIL gives
(progressive, grey, CMYK, tiny and large); one whose EXIF or XMP may turn it, any other format, and a broken file
go through PIL, turned as shown or ``None``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from litstarter._engine.images.box_files import shown_size


def pil_size(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:
        turned = image.getexif().get(0x0112, 1) in (5, 6, 7, 8)
        return image.size[::-1] if turned else image.size


@pytest.mark.parametrize("size", [(500, 375), (17, 9), (1, 1), (1600, 1200)])
@pytest.mark.parametrize("mode", ["RGB", "L", "CMYK"])
@pytest.mark.parametrize("progressive", [False, True])
def test_a_plain_jpeg_gives_the_size_pil_gives(tmp_path: Path, size, mode, progressive) -> None:
    pixels = np.random.default_rng(0).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    path = tmp_path / "a.jpg"
    Image.fromarray(pixels).convert(mode).save(path, progressive=progressive)
    assert shown_size(path) == pil_size(path) == size


@pytest.mark.parametrize("orientation", [1, 3, 6, 8])
def test_an_exif_orientation_turns_a_jpeg_as_shown(tmp_path: Path, orientation: int) -> None:
    exif = Image.Exif()
    exif[0x0112] = orientation
    path = tmp_path / "a.jpg"
    Image.new("RGB", (40, 20)).save(path, exif=exif)
    assert shown_size(path) == ((20, 40) if orientation in (6, 8) else (40, 20))


def test_an_xmp_orientation_turns_a_jpeg_as_shown(tmp_path: Path) -> None:
    xmp = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:Description tiff:Orientation="6"/></x:xmpmeta>'
    path = tmp_path / "a.jpg"
    Image.new("RGB", (40, 20)).save(path, xmp=xmp)
    assert shown_size(path) == pil_size(path) == (20, 40)


def test_other_formats_and_broken_files(tmp_path: Path) -> None:
    Image.new("L", (30, 10)).save(tmp_path / "a.png")
    (tmp_path / "cut.jpg").write_bytes(b"\xff\xd8\xff\xe0\x00")
    (tmp_path / "text.jpg").write_bytes(b"not an image")
    assert shown_size(tmp_path / "a.png") == (30, 10)
    assert shown_size(tmp_path / "cut.jpg") is None
    assert shown_size(tmp_path / "text.jpg") is None
    assert shown_size(tmp_path / "missing.jpg") is None
