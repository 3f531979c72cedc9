"""Perceptual hashes and near pairs: the bucket search finds exactly what brute force finds, around the threshold;
flat images get no hash; an older cache version is rebuilt with an information line, not a 'malformed' warning."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from litstarter._engine.images import perceptual
from litstarter._engine.images.manifest import CACHE_VERSION, MANIFEST
from litstarter._engine.images.perceptual import as_hex, brute_force_pairs, bucket_pairs, close_pairs, from_hex, phash
from litstarter.data import ImageFolderDataModule
from tests.helpers import make_image_folder


def flipped(value: np.uint64, bits: np.ndarray) -> np.uint64:
    for bit in bits:
        value ^= np.uint64(1) << np.uint64(int(bit))
    return value


@pytest.fixture(scope="module")
def planted() -> tuple[np.ndarray, np.ndarray]:
    """Random hashes, with copies of 100 of ``a`` in ``b`` at 0..13 flipped bits (either side of 10)."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**63, 3000, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, 3000, dtype=np.uint64)
    b = rng.integers(0, 2**63, 2000, dtype=np.uint64)
    for k in range(100):
        b[(k * 17) % len(b)] = flipped(a[k], rng.choice(64, size=k % 14, replace=False))
    return a, b


@pytest.mark.parametrize("max_distance", [0, 3, 10, 12])
def test_buckets_find_exactly_the_pairs_brute_force_finds(planted, max_distance: int) -> None:
    a, b = planted
    expected = brute_force_pairs(a, b, max_distance)
    found = bucket_pairs(a, b, max_distance, rows=256)  # several row blocks
    for want, got in zip(expected, found, strict=True):
        np.testing.assert_array_equal(want, got)
    assert len(expected[0]) >= 100 * min(max_distance + 1, 14) // 14  # the planted pairs within reach are there
    assert (expected[2] <= max_distance).all()


def test_close_pairs_switches_to_buckets_past_the_brute_force_size(planted, monkeypatch) -> None:
    a, b = planted
    expected = close_pairs(a, b, 10)
    calls = []
    monkeypatch.setattr(perceptual, "BRUTE_FORCE_PAIRS", 1000)
    monkeypatch.setattr(perceptual, "bucket_pairs", lambda *args: calls.append(1) or bucket_pairs(*args))
    for want, got in zip(expected, close_pairs(a, b, 10), strict=True):
        np.testing.assert_array_equal(want, got)
    assert calls == [1]


def test_flat_images_have_no_hash_and_pair_with_nothing() -> None:
    flat = np.full((3, 40, 40), 120, np.uint8)
    other = np.full((1, 40, 40), 7, np.uint8)
    rng = np.random.default_rng(1)
    textured = rng.integers(0, 256, (3, 40, 40), dtype=np.uint8)
    assert phash(flat) is None and phash(other) is None and phash(textured) is not None
    hashes, where = from_hex([as_hex(phash(flat)), as_hex(phash(textured)), as_hex(phash(other))])
    assert where.tolist() == [1] and hashes.tolist() == [phash(textured)]


def test_a_cache_of_an_older_version_is_rebuilt_with_an_information_line(tmp_path: Path, caplog) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 4, "b": 4})
    module = lambda: ImageFolderDataModule(str(root), image_size=16, cache_dir=str(tmp_path / "cache"), num_workers=0)  # noqa: E731
    first = module()
    first.prepare_data()
    path = first.folder.cache_folder() / MANIFEST
    old = json.loads(path.read_text())
    old["version"] = CACHE_VERSION - 1
    for split in old["splits"].values():
        del split["files"]["phash"]  # what an older litstarter wrote
    path.write_text(json.dumps(old))
    again = module()
    with caplog.at_level(logging.INFO, logger="litstarter"):
        again.prepare_data()
    assert not again.cache.reused and again.cache.column("train", "phash")
    said = [r for r in caplog.records if "rebuilding" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO, [r.getMessage() for r in said]
    assert f"written for cache version {CACHE_VERSION - 1}" in said[0].getMessage()
