"""The cache trusts nothing it finds: malformed manifests, files edited behind its back, damaged arrays."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from litstarter._engine.images.cache import load_cache
from litstarter._engine.images.manifest import (
    MANIFEST,
    MIN_BLOCK,
    SAMPLED_BLOCKS,
    array_checksums,
    block_size_for,
    blocks_to_verify,
    manifest_problem,
    verify_blocks,
)
from litstarter._engine.images.preprocess import load_image
from litstarter.data import ImageFolderDataModule
from tests.helpers import make_image_folder, write_image


def module(root: Path, cache_dir: Path, **kwargs) -> ImageFolderDataModule:
    kwargs = {"image_size": 16, "val_fraction": 0.25, "test_fraction": 0.0, "num_workers": 0, **kwargs}
    return ImageFolderDataModule(str(root), cache_dir=str(cache_dir), **kwargs)


@pytest.fixture
def built(tmp_path: Path) -> ImageFolderDataModule:
    root = make_image_folder(tmp_path / "root", {"a": 6, "b": 6})
    dm = module(root, tmp_path / "cache")
    dm.prepare_data()
    assert not dm.cache.reused
    return dm


def reload(dm: ImageFolderDataModule):
    return load_cache(
        dm.folder.cache_folder(), dm.folder.cache_params(), dm.folder.listing().sources, dm.folder.class_to_idx
    )


def edit_manifest(dm: ImageFolderDataModule, edit) -> None:
    path = dm.folder.cache_folder() / MANIFEST
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps(edit(manifest)))


def without_shape(m: dict) -> dict:
    del m["splits"]["train"]["shape"]
    return m


def with_shape_abc(m: dict) -> dict:
    m["splits"]["train"]["shape"] = "abc"
    return m


def with_renamed_class(m: dict) -> dict:
    m["class_to_idx"] = {"a": 0, "z": 1}
    return m


def with_swapped_classes(m: dict) -> dict:
    m["class_to_idx"] = {"a": 1, "b": 0}
    return m


def with_a_missing_file_record(m: dict) -> dict:
    m["splits"]["val"]["files"]["sha256"].pop()
    return m


@pytest.mark.parametrize(
    ("edit", "logged"),
    [
        (lambda m: [], "malformed (the manifest should be a JSON object)"),
        (lambda m: None, "malformed (the manifest should be a JSON object)"),
        (without_shape, "malformed (splits.train.shape should be [N, C, H, W] of non-negative ints)"),
        (with_shape_abc, "malformed (splits.train.shape should be"),
        (with_a_missing_file_record, "malformed (splits.val.files.sha256 should be a list of"),
        (with_renamed_class, "its class_to_idx {'a': 0, 'z': 1} is not {'a': 0, 'b': 1}"),
        (with_swapped_classes, "its class_to_idx {'a': 1, 'b': 0} is not {'a': 0, 'b': 1}"),
    ],
    ids=["list", "null", "no-shape", "shape-abc", "files", "renamed-class", "swapped-classes"],
)
def test_a_malformed_or_edited_manifest_means_rebuild_with_a_log_line(built, edit, logged, caplog) -> None:
    edit_manifest(built, edit)
    again = module(built.root, built.folder.cache_dir)
    with caplog.at_level(logging.INFO, logger="litstarter"):
        again.prepare_data()  # never a crash, never "restart the run"
    assert not again.cache.reused
    assert any(logged in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records), caplog.text
    assert again.cache.manifest["class_to_idx"] == {"a": 0, "b": 1}
    third = module(built.root, built.folder.cache_dir)
    third.prepare_data()
    assert third.cache.reused  # and the rebuilt cache is trusted again


def same_size_edit(path: Path, seed: int) -> None:
    """New pixels, same byte count (an uncompressed BMP), then the old mtime put back, as ``cp -p`` does."""
    before = path.stat()
    pixels = np.random.default_rng(seed).integers(0, 256, (20, 24, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, format="BMP")
    assert path.stat().st_size == before.st_size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize("how", ["in place (cp -p)", "replaced by rename (rsync -a)"])
def test_a_file_edited_with_its_old_mtime_and_size_is_not_reused_stale(tmp_path: Path, how: str) -> None:
    root = tmp_path / "root"
    for c in ("a", "b"):
        for i in range(4):
            write_image(root / c / f"{i}.bmp", (20, 24), seed=i + 10 * (c == "b"))
    first = module(root, tmp_path / "cache")
    first.prepare_data()
    target = root / "a" / "0.bmp"
    if how.startswith("in place"):
        same_size_edit(target, seed=99)
    else:
        stat = target.stat()
        staged = root / "a" / ".0.bmp.rsync"
        shutil.copy(target, staged)
        same_size_edit(staged, seed=99)
        os.utime(staged, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        os.replace(staged, target)
    second = module(root, tmp_path / "cache")
    second.prepare_data()
    assert not second.cache.reused
    split = next(s for s in second.cache.splits if any(r["path"] == "a/0.bmp" for r in second.cache.files(s)))
    row = [r["path"] for r in second.cache.files(split)].index("a/0.bmp")
    np.testing.assert_array_equal(second.cache.images(split)[row], load_image(target, 3, second.resize_size))


def test_a_damaged_array_block_is_found_and_rebuilt(built, caplog) -> None:
    images = built.folder.cache_folder() / "train.u8"
    data = bytearray(images.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one bit pattern flipped, the file size unchanged
    images.write_bytes(bytes(data))
    assert reload(built) is None  # one block: first == last, always checked
    assert "does not match its checksum" in caplog.text
    again = module(built.root, built.folder.cache_dir)
    again.prepare_data()
    assert not again.cache.reused


def test_the_sample_checks_first_last_and_seeded_blocks_and_full_checks_every_one(tmp_path: Path) -> None:
    n_blocks = 40
    path = tmp_path / "x.u8"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, n_blocks * MIN_BLOCK, dtype=np.uint8).tobytes())
    sums = array_checksums(path, n_blocks * MIN_BLOCK)
    assert sums["block_size"] == MIN_BLOCK and len(sums["images"]) == n_blocks
    sample = blocks_to_verify(n_blocks, full=False, seed=3)
    assert sample[:2] == [0, n_blocks - 1] and len(set(sample)) == 2 + SAMPLED_BLOCKS
    assert blocks_to_verify(n_blocks, full=False, seed=4) != sample  # other runs check other blocks
    assert verify_blocks(path, sums, blocks_to_verify(n_blocks, full=True, seed=None)) is None
    unchecked = next(i for i in range(n_blocks) if i not in sample)
    data = bytearray(path.read_bytes())
    data[unchecked * MIN_BLOCK + 7] ^= 1
    path.write_bytes(bytes(data))
    assert verify_blocks(path, sums, sample) is None  # a sample can miss it ...
    assert verify_blocks(path, sums, blocks_to_verify(n_blocks, full=True, seed=None)) == unchecked  # ... full can't


def test_block_size_grows_so_that_a_huge_cache_keeps_a_small_manifest() -> None:
    assert block_size_for(10 * MIN_BLOCK) == MIN_BLOCK
    assert block_size_for(50 * 10**9) * 512 >= 50 * 10**9  # a 50 GB cache: at most 512 checksums per array


def test_cache_verify_full_finds_damage_the_sample_skips(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 30, "b": 30}, size=(40, 40))
    dm = module(root, tmp_path / "cache", image_size=112, val_fraction=0.1)  # 128x128x3 per image: many blocks
    dm.prepare_data()
    entry = dm.cache.manifest["splits"]["train"]
    n_blocks = len(entry["checksums"]["images"])
    assert n_blocks > 2 + SAMPLED_BLOCKS
    images = dm.folder.cache_folder() / "train.u8"
    data = bytearray(images.read_bytes())
    for block in range(1, n_blocks - 1):  # every middle block damaged; first and last intact
        data[block * entry["checksums"]["block_size"]] ^= 0xFF
    images.write_bytes(bytes(data))
    full = module(root, tmp_path / "cache", image_size=112, val_fraction=0.1, cache_verify="full")
    full.prepare_data()
    assert not full.cache.reused


def test_the_manifest_records_each_files_original_size_mode_and_content_hash(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write_image(root / "a" / "grey.png", (31, 20), "L")
    write_image(root / "a" / "rgba.png", (17, 23), "RGBA", seed=1)
    write_image(root / "b" / "rgb.jpg", (40, 12), "RGB", seed=2)
    write_image(root / "b" / "p.png", (9, 30), "P", seed=3)
    dm = module(root, tmp_path / "cache", val_fraction=0.5)
    dm.prepare_data()
    records = {r["path"]: r for s in dm.cache.splits for r in dm.cache.files(s)}
    assert set(records) == {"a/grey.png", "a/rgba.png", "b/rgb.jpg", "b/p.png"}
    for rel, record in records.items():
        with Image.open(root / rel) as image:
            assert (record["width"], record["height"], record["mode"]) == (*image.size, image.mode)
        assert record["sha256"] == hashlib.sha256((root / rel).read_bytes()).hexdigest()
        assert manifest_problem(dm.cache.manifest) is None


def test_every_fit_warns_about_images_in_more_than_one_split(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"train": {"a": 6, "b": 6}, "val": {"a": 2, "b": 2}})
    for i in range(4):  # four training images copied into val, under other names and another class
        shutil.copy(root / "train" / "a" / f"00{i}.png", root / "val" / "b" / f"copy_{i}.png")
    dm = module(root, tmp_path / "cache")
    with pytest.warns(UserWarning, match=r"data leakage: 4 image\(s\) appear in more than one split") as record:
        dm.prepare_data()
    message = str(record[0].message)
    assert "train/a/000.png = val/b/copy_0.png" in message and "and 1 more" in message


def first_sha256(m: dict) -> tuple[str, str]:
    sha = m["splits"]["train"]["files"]["sha256"][0]
    return f'"{sha}"', f'"{sha[::-1]}"'


@pytest.mark.parametrize(
    ("edit", "logged"),
    [
        (first_sha256, "its digest does not match its contents"),
        (lambda m: ('"digest": "', '"digested": "'), "it has no digest of itself"),
        (lambda m: (f'"std": [\n    {m["std"][0]!r}', f'"std": [\n    {-m["std"][0]!r}'),
         "std should be a list of 3 numbers in [1e-09, 1]"),
    ],
    ids=["file-record", "no-digest", "negative-std"],
)  # fmt: skip
def test_a_value_edited_in_the_manifests_text_means_rebuild(built, edit, logged: str, caplog) -> None:
    """Edited in place, as an editor would: a file record that only inspect reads, the digest itself, a std."""
    path = built.folder.cache_folder() / MANIFEST
    text = path.read_text()
    old, new = edit(json.loads(text))
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with caplog.at_level(logging.INFO, logger="litstarter"):
        assert reload(built) is None
    assert any(logged in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records), caplog.text
    path.write_text(text)
    assert reload(built) is not None  # the text as written is trusted
