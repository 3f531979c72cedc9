"""The uint8 memmap cache: decoding every mode, bad files under both policies, reuse, invalidation, crashes."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import socket
from pathlib import Path

import numpy as np
import pytest

import litstarter._engine.images.cache_build as cache_module
from litstarter._engine.images.cache import MemmapImages, load_cache
from litstarter._engine.images.manifest import MANIFEST
from litstarter._engine.images.preprocess import load_image
from litstarter.data import ImageFolderDataModule
from litstarter.errors import BadInputError
from tests.helpers import make_image_folder, write_image


def module(root: Path, cache_dir: Path, **kwargs) -> ImageFolderDataModule:
    kwargs = {"image_size": 16, "val_fraction": 0.25, "test_fraction": 0.0, "num_workers": 0, **kwargs}
    return ImageFolderDataModule(str(root), cache_dir=str(cache_dir), **kwargs)


def cached_files(dm: ImageFolderDataModule, split: str) -> list[str]:
    return dm.cache.column(split, "path")


def cached_pixels(dm: ImageFolderDataModule, rel: str) -> np.ndarray:
    """The cached ``(C, H, W)`` pixels of one source file, wherever the split put it."""
    for split in dm.cache.splits:
        if rel in cached_files(dm, split):
            return dm.cache.images(split)[cached_files(dm, split).index(rel)]
    raise AssertionError(f"{rel} is not in the cache")


MIXED = [  # (file name, PIL mode, (h, w)): every mode and format the issue lists, odd sizes
    ("gray.png", "L", (20, 31)),
    ("rgb.jpg", "RGB", (33, 18)),
    ("rgba.png", "RGBA", (17, 17)),
    ("palette.png", "P", (25, 40)),
    ("cmyk.jpg", "CMYK", (30, 22)),
    ("sixteen.png", "I;16", (19, 26)),
    ("gray_alpha.png", "LA", (21, 21)),
    ("bilevel.bmp", "1", (24, 20)),
    ("photo.webp", "RGB", (40, 60)),
    ("scan.tiff", "RGB", (18, 50)),
]


@pytest.mark.parametrize("channels", [3, 1])
def test_every_mode_and_size_is_cached_exactly_as_load_image_decodes_it(tmp_path: Path, channels: int) -> None:
    root = tmp_path / "root"
    for c in ("a", "b"):
        for i, (name, mode, size) in enumerate(MIXED):
            write_image(root / c / name, size, mode, seed=i + 100 * (c == "b"))
    dm = module(root, tmp_path / "cache", channels=channels, image_size=[12, 16])
    dm.prepare_data()
    dm.setup("fit")
    resize_size = dm.resize_size
    assert resize_size == (14, 18)
    for split in ("train", "val"):
        images = dm.cache.images(split)
        assert images.shape == (len(cached_files(dm, split)), channels, *resize_size)
        for row, rel in enumerate(cached_files(dm, split)):
            # The cache holds exactly what preprocess.load_image (shared with `infer`) returns.
            np.testing.assert_array_equal(images[row], load_image(root / rel, channels, resize_size), err_msg=rel)
    image, label = dm.val_set[0]
    assert image.shape == (channels, 12, 16) and str(image.dtype) == "torch.uint8"
    assert dm.cache.manifest["class_to_idx"] == {"a": 0, "b": 1}
    assert len(dm.cache.manifest["mean"]) == channels


def make_bad_files(root: Path) -> dict[str, str]:
    """One of each kind of bad file; returns {relative path: expected reason fragment}."""
    good_jpeg = write_image(root / "a" / "tmp.jpg", (40, 40))
    data = good_jpeg.read_bytes()
    good_jpeg.unlink()
    (root / "a" / "truncated.jpg").write_bytes(data[: len(data) // 2])
    (root / "b" / "empty.png").write_bytes(b"")
    (root / "b" / "corrupt.png").write_bytes(np.random.default_rng(0).bytes(500))
    (root / "a" / "text.jpg").write_text("this is not a JPEG")
    return {"a/truncated.jpg": "truncated", "b/empty.png": "empty file", "b/corrupt.png": "cannot identify",
            "a/text.jpg": "cannot identify"}  # fmt: skip


def test_bad_files_stop_the_build_with_one_message_listing_every_one(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 8, "b": 8})
    bad = make_bad_files(root)
    dm = module(root, tmp_path / "cache")
    with pytest.raises(BadInputError, match=r"4 image file\(s\) under .* could not be read") as info:
        dm.prepare_data()
    message = str(info.value)
    for rel, reason in bad.items():
        line = next(line for line in message.splitlines() if str(root / rel) in line)
        assert reason in line, line
    assert "data.on_bad_file=skip" in message
    folder = dm.folder.cache_folder()
    assert not (folder / MANIFEST).exists() and not list(folder.glob("*.u8")) and not list(folder.glob(".*"))


def test_skip_leaves_bad_files_out_warns_with_the_count_and_lists_them_in_the_manifest(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 8, "b": 8})
    bad = make_bad_files(root)
    dm = module(root, tmp_path / "cache", on_bad_file="skip")
    with pytest.warns(UserWarning, match=r"left out 4 unreadable image file\(s\)"):
        dm.prepare_data()
    manifest = json.loads((dm.folder.cache_folder() / MANIFEST).read_text())
    assert {s["path"] for s in manifest["skipped"]} == set(bad)
    assert all(s["reason"] for s in manifest["skipped"])
    kept = cached_files(dm, "train") + cached_files(dm, "val")
    assert len(kept) == 16 and not set(bad) & set(kept)
    dm.setup("fit")
    assert len(dm.train_set) + len(dm.val_set) == 16
    # Switching back to `error` on the same cache is loud again, without a rebuild.
    with pytest.raises(BadInputError, match="4 image file"):
        module(root, tmp_path / "cache", on_bad_file="error").prepare_data()


def test_build_cache_drops_bad_files_only_when_told_to_skip(tmp_path: Path) -> None:
    # The value is checked once, in ImageFolderDataModule; called directly with anything but "skip", the
    # build still refuses to leave files out.
    root = make_image_folder(tmp_path / "root", {"a": 4, "b": 4})
    (root / "b" / "empty.png").write_bytes(b"")
    dm = module(root, tmp_path / "cache")
    sources = dm.folder.listing().sources
    with pytest.raises(BadInputError, match=r"1 image file\(s\) under .* could not be read"):
        cache_module.build_cache(
            dm.folder.cache_folder(),
            root,
            dm.folder.cache_params(),
            sources,
            dm.folder.class_to_idx,
            3,
            dm.resize_size,
            on_bad_file="Skip",
        )


def test_a_class_whose_every_file_is_bad_is_not_dropped_silently(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"good": 6})
    for i in range(4):
        (root / "broken" / f"{i}.png").parent.mkdir(exist_ok=True)
        (root / "broken" / f"{i}.png").write_bytes(b"")
    with pytest.raises(BadInputError, match=r"\['broken'\] have no readable training images") as info:
        module(root, tmp_path / "cache", on_bad_file="skip").prepare_data()
    assert str(root / "broken" / "0.png") in str(info.value)


def test_unchanged_files_reuse_the_cache_without_decoding(tmp_path: Path, monkeypatch) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 6, "b": 6})
    first = module(root, tmp_path / "cache")
    first.prepare_data()
    assert not first.cache.reused
    inode = (first.folder.cache_folder() / "train.u8").stat().st_ino

    def no_decoding(*args, **kwargs):
        raise AssertionError("the cache was rebuilt although nothing changed")

    monkeypatch.setattr(cache_module, "try_load_image", no_decoding)
    second = module(root, tmp_path / "cache")
    second.setup("fit")  # setup alone (the other DDP ranks) only loads
    assert second.cache.reused and second.folder.cache_folder() == first.folder.cache_folder()
    assert (second.folder.cache_folder() / "train.u8").stat().st_ino == inode
    assert second.normalization() == first.normalization()


@pytest.mark.parametrize("change", ["modify", "add", "remove", "image_size", "channels", "seed"])
def test_a_changed_file_or_preprocessing_parameter_rebuilds(tmp_path: Path, change: str) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 6, "b": 6})
    before = module(root, tmp_path / "cache")
    before.prepare_data()
    kwargs = {}
    if change == "modify":
        write_image(root / "a" / "000.png", (40, 40), seed=99)  # other pixels, other size on disk
    elif change == "add":
        write_image(root / "b" / "new.png", seed=98)
    elif change == "remove":
        (root / "a" / "001.png").unlink()
    else:
        kwargs = {"image_size": 20, "channels": 1, "seed": 7}[change]
        kwargs = {change: kwargs}
    after = module(root, tmp_path / "cache", **kwargs)
    after.prepare_data()
    assert not after.cache.reused
    files = cached_files(after, "train") + cached_files(after, "val")
    assert len(files) == {"add": 13, "remove": 11}.get(change, 12)
    if change == "modify":
        expected = load_image(root / "a" / "000.png", 3, after.resize_size)
        np.testing.assert_array_equal(cached_pixels(after, "a/000.png"), expected)
    if change in ("image_size", "channels", "seed"):
        assert after.folder.cache_folder() != before.folder.cache_folder()  # one folder per parameter set
        assert after.cache.images("train").shape[1:] == (after.channels, *after.resize_size)
    # And the new state is reused in turn.
    again = module(root, tmp_path / "cache", **kwargs)
    again.prepare_data()
    assert again.cache.reused


def _build_then_die(root: Path, cache_dir: Path) -> None:
    real = cache_module.try_load_image
    calls = []

    def dies_midway(*args, **kwargs):
        calls.append(1)
        if len(calls) == 5:
            os._exit(3)  # like SIGKILL: no exception handlers, no finally blocks, no cleanup
        return real(*args, **kwargs)

    cache_module.try_load_image = dies_midway
    module(root, cache_dir).prepare_data()


def test_a_killed_build_is_never_trusted(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 6, "b": 6})
    complete = module(root, tmp_path / "cache")
    complete.prepare_data()
    folder = complete.folder.cache_folder()
    write_image(root / "a" / "000.png", (30, 30), seed=42)  # forces a rebuild ...
    child = multiprocessing.get_context("fork").Process(target=_build_then_die, args=(root, tmp_path / "cache"))
    child.start()
    child.join(60)
    assert child.exitcode == 3  # ... that is killed half-way through decoding
    # The old manifest and arrays are untouched and consistent, but describe files that changed: not trusted.
    sources = complete.folder.listing().sources
    leftovers = list(folder.glob(".*.tmp"))  # the dead build's, named for its pid and host
    assert leftovers and all(f".{child.pid}@" in p.name for p in leftovers)
    params = complete.folder.cache_params()
    assert (folder / MANIFEST).exists() and load_cache(folder, params, sources, complete.folder.class_to_idx) is None
    assert not list(folder.glob(".*.tmp"))  # the next run removed them: their process is gone
    rebuilt = module(root, tmp_path / "cache")
    rebuilt.prepare_data()
    assert not rebuilt.cache.reused
    expected = load_image(root / "a" / "000.png", 3, rebuilt.resize_size)
    np.testing.assert_array_equal(cached_pixels(rebuilt, "a/000.png"), expected)


def test_builders_on_two_hosts_sharing_the_folder_never_clobber_each_other(tmp_path: Path, monkeypatch) -> None:
    # Two nodes' local rank 0 build the same cache on a shared filesystem, with the same pid. Here node B's
    # whole build runs while node A is decoding its first file; A then finds B's cache complete and uses it.
    root = make_image_folder(tmp_path / "root", {"a": 4, "b": 4})
    real_decode, real_host = cache_module.try_load_image, socket.gethostname
    token_a = f"{os.getpid()}@{real_host()}"
    seen_tmp: list[str] = []

    def node_b_builds_midway(*args, **kwargs):
        if not seen_tmp:
            seen_tmp.extend(p.name for p in node_a.folder.cache_folder().glob(".*.tmp"))  # A's, mid-decode
            monkeypatch.setattr(socket, "gethostname", lambda: "node-b")
            node_b.prepare_data()
            monkeypatch.setattr(socket, "gethostname", real_host)
        return real_decode(*args, **kwargs)

    node_a, node_b = module(root, tmp_path / "cache"), module(root, tmp_path / "cache")
    monkeypatch.setattr(cache_module, "try_load_image", node_b_builds_midway)
    node_a.prepare_data()
    assert seen_tmp and all(name.endswith(f".{token_a}.tmp") for name in seen_tmp)  # named for A's host and pid
    assert not node_b.cache.reused  # B built it ...
    assert node_a.cache.reused and node_a.cache.manifest == node_b.cache.manifest  # ... and A took B's cache
    folder = node_a.folder.cache_folder()
    assert not list(folder.glob(".*.tmp"))  # neither builder left (or lost) temporary files
    sources = node_a.folder.listing().sources
    assert load_cache(folder, node_a.folder.cache_params(), sources, node_a.folder.class_to_idx) is not None
    monkeypatch.setattr(cache_module, "try_load_image", real_decode)
    for split in ("train", "val"):
        for rel in cached_files(node_a, split):
            expected = load_image(root / rel, 3, node_a.resize_size)
            np.testing.assert_array_equal(cached_pixels(node_a, rel), expected)


def test_a_damaged_cache_is_rebuilt(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 6, "b": 6})
    dm = module(root, tmp_path / "cache")
    dm.prepare_data()
    folder, params, classes = dm.folder.cache_folder(), dm.folder.cache_params(), dm.folder.class_to_idx
    sources = dm.folder.listing().sources
    assert load_cache(folder, params, sources, classes) is not None
    with open(folder / "train.u8", "r+b") as f:  # a torn array file
        f.truncate(100)
    assert load_cache(folder, params, sources, classes) is None
    dm2 = module(root, tmp_path / "cache")
    dm2.prepare_data()
    assert not dm2.cache.reused
    assert (folder / "train.u8").stat().st_size == int(np.prod(dm2.cache.images("train").shape))
    (folder / MANIFEST).write_text("{ not json")
    assert load_cache(folder, params, sources, classes) is None


def test_multi_process_build_equals_the_in_process_build(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"a": 10, "b": 10}, size=(30, 26))
    serial = module(root, tmp_path / "serial", cache_workers=0)
    serial.prepare_data()
    parallel = module(root, tmp_path / "parallel", cache_workers=2)
    parallel.prepare_data()
    for split in ("train", "val"):
        np.testing.assert_array_equal(serial.cache.images(split).array(), parallel.cache.images(split).array())
        np.testing.assert_array_equal(serial.cache.targets(split), parallel.cache.targets(split))
    assert serial.cache.mean == parallel.cache.mean


def test_memmap_images_pickle_as_a_path_not_as_pixels(tmp_path: Path) -> None:
    data = np.arange(4 * 3 * 8 * 8, dtype=np.uint8).reshape(4, 3, 8, 8)
    data.tofile(tmp_path / "x.u8")
    images = MemmapImages(tmp_path / "x.u8", data.shape)
    np.testing.assert_array_equal(images[2], data[2])
    blob = pickle.dumps(images)
    assert len(blob) < 300
    np.testing.assert_array_equal(np.asarray(pickle.loads(blob)), data)
