"""The uint8 memory-mapped image cache: decode, convert and resize each file once; read raw pixels after.

One cache folder holds, per split, ``<split>.u8`` (raw uint8 ``(N, C, H, W)``, C order, memory-mapped)
and ``<split>.labels.npy``, plus ``manifest.json``: the source files with size and mtime, ``class_to_idx``,
the preprocessing parameters, the train split's per-channel mean and std, and any skipped bad files.

Trust rule: a build decodes into temporary files, deletes the manifest just before it renames its arrays into
place, and writes the new manifest last; on load the manifest must match the current file listing and
parameters and every array must have the size it declares. A build killed while renaming therefore leaves no
manifest, and one killed earlier leaves the old, consistent cache (which no longer matches the files): either
way a later run rebuilds.

Several builders may share a folder (one per node on a shared filesystem, where ``prepare_data`` runs on every
node's local rank 0): temporary names carry the host name and the pid, so no builder touches another's, and a
builder that finds a valid manifest written meanwhile discards its own arrays and uses that cache.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import multiprocessing
import os
import re
import socket
import time
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from tqdm import tqdm

from litstarter.data.dataset import channel_stats
from litstarter.data.splits import SourceFile
from litstarter.errors import BadInputError
from litstarter.io import write_json
from litstarter.listing import shown
from litstarter.preprocess import try_load_image

log = logging.getLogger(__name__)

#: Bump when the preprocessing or the file format changes: older caches are then rebuilt.
CACHE_VERSION = 1
MANIFEST = "manifest.json"
#: Temporary files of a build older than this are leftovers of a killed build and are removed.
STALE_TMP_SECONDS = 3600

OnBadFile = Literal["error", "skip"]


def cache_key(params: dict) -> str:
    """A short digest of the preprocessing parameters: one cache folder per parameter set."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]


def listing_digest(files: list[SourceFile]) -> str:
    """Digest of a split's file listing (paths, labels, sizes, mtimes): any change, addition or removal shows."""
    digest = hashlib.sha256()
    for f in files:
        # surrogateescape: a file name that isn't valid UTF-8 is hashed as its raw bytes
        digest.update(f"{f.path}\0{f.label}\0{f.size}\0{f.mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


class MemmapImages:
    """A read-only uint8 ``(N, C, H, W)`` memory map, opened lazily.

    It pickles as its path and shape, so DataLoader workers started by ``spawn``/``forkserver`` reopen the
    file instead of receiving a copy of the whole array.

    Args:
        path: The raw ``.u8`` file.
        shape: ``(N, C, H, W)``.
    """

    dtype = np.dtype(np.uint8)
    ndim = 4

    def __init__(self, path: str | os.PathLike, shape: tuple[int, int, int, int]) -> None:
        self.path = Path(path)
        self.shape = tuple(int(s) for s in shape)
        self._array: np.ndarray | None = None

    def array(self) -> np.ndarray:
        """The memory map itself (an empty array for an empty split: a zero-byte file cannot be mapped)."""
        if self._array is None:
            if self.shape[0] == 0:
                self._array = np.empty(self.shape, dtype=np.uint8)
            else:
                self._array = np.memmap(self.path, dtype=np.uint8, mode="r", shape=self.shape)
        return self._array

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, item):
        return self.array()[item]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(self.array(), dtype=dtype)

    def __getstate__(self) -> dict:
        return {"path": self.path, "shape": self.shape}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"], state["shape"])


@dataclass
class ImageCache:
    """A complete, validated cache folder.

    Args:
        folder: The cache folder.
        manifest: Its parsed ``manifest.json``.
        reused: True if it was found valid, False if this call built it.
    """

    folder: Path
    manifest: dict
    reused: bool

    @property
    def splits(self) -> list[str]:
        """Split names in the cache."""
        return list(self.manifest["splits"])

    def images(self, split: str) -> MemmapImages:
        """The ``(N, C, H, W)`` uint8 images of a split, memory-mapped."""
        return MemmapImages(self.folder / f"{split}.u8", self.manifest["splits"][split]["shape"])

    def labels(self, split: str) -> np.ndarray:
        """The ``(N,)`` int64 labels of a split."""
        return np.load(self.folder / f"{split}.labels.npy")

    @property
    def mean(self) -> list[float]:
        """Per-channel mean of the train split, 0..1 scale."""
        return self.manifest["mean"]

    @property
    def std(self) -> list[float]:
        """Per-channel std of the train split, 0..1 scale."""
        return self.manifest["std"]

    @property
    def skipped(self) -> list[dict]:
        """Bad files left out under ``on_bad_file: skip``: ``[{"path", "reason"}]``."""
        return self.manifest["skipped"]


def load_cache(folder: Path, params: dict, sources: dict[str, list[SourceFile]]) -> ImageCache | None:
    """The cache in ``folder`` if it is complete and matches ``params`` and ``sources``; else ``None``."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if manifest.get("version") != CACHE_VERSION or manifest.get("params") != params:
        return None
    if set(manifest.get("splits", {})) != set(sources):
        return None
    for split, files in sources.items():
        entry = manifest["splits"][split]
        if entry.get("listing_digest") != listing_digest(files):
            return None
        shape = entry["shape"]
        images, labels = folder / f"{split}.u8", folder / f"{split}.labels.npy"
        if not images.is_file() or images.stat().st_size != int(np.prod(shape)):
            return None
        try:
            if np.load(labels, mmap_mode="r").shape != (shape[0],):
                return None
        except (OSError, ValueError):
            return None
    return ImageCache(folder, manifest, reused=True)


def bad_files_error(root: Path, bad: list[dict]) -> BadInputError:
    """One error that lists every bad file with its path and reason."""
    listed = "\n".join(f"  {shown(root / b['path'])}: {b['reason']}" for b in bad)
    return BadInputError(
        f"{len(bad)} image file(s) under '{root}' could not be read (data.on_bad_file=error):\n{listed}\n"
        "Fix or remove them, or set data.on_bad_file=skip to leave them out (they are then counted in a warning"
        " and listed in the cache manifest)."
    )


def warn_skipped(root: Path, folder: Path, skipped: list[dict]) -> None:
    """The warning for files left out under ``on_bad_file: skip``."""
    if skipped:
        first = "; ".join(f"{shown(s['path'])} ({s['reason']})" for s in skipped[:3])
        more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        warnings.warn(
            f"data.on_bad_file=skip: left out {len(skipped)} unreadable image file(s) under '{root}': {first}{more}."
            f" All are listed under 'skipped' in {folder / MANIFEST}.",
            stacklevel=2,
        )


def _remove_stale_temporaries(folder: Path) -> None:
    """Delete temporary files that a killed build left behind (old enough not to belong to a live build)."""
    now = time.time()
    for tmp in folder.glob(".*.tmp"):
        try:
            if now - tmp.stat().st_mtime > STALE_TMP_SECONDS:
                tmp.unlink()
        except FileNotFoundError:
            pass


def _build_token() -> str:
    """``<host>-<pid>``: unique among the builders of one folder, even across hosts that share it."""
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "host"
    return f"{host}-{os.getpid()}"


def _decode_all(
    paths: list[Path], channels: int, size: tuple[int, int], workers: int, desc: str
) -> Iterator[tuple[np.ndarray | None, str | None]]:
    """``try_load_image`` over ``paths`` in order, in this process or a pool of ``workers`` processes."""
    decode = functools.partial(try_load_image, channels=channels, size=size)
    with tqdm(total=len(paths), desc=desc, unit="img", disable=None, leave=False) as bar:
        if workers <= 1:
            for path in paths:
                yield decode(path)
                bar.update()
            return
        # spawn, not fork: the parent holds torch threads, and the worker needs only numpy and Pillow.
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for result in pool.imap(decode, paths, chunksize=max(1, min(64, len(paths) // (8 * workers)))):
                yield result
                bar.update()


def build_cache(
    folder: Path,
    root: Path,
    params: dict,
    sources: dict[str, list[SourceFile]],
    class_to_idx: dict[str, int],
    channels: int,
    size: tuple[int, int],
    on_bad_file: OnBadFile = "error",
    workers: int = 0,
) -> ImageCache:
    """Decode every source file into ``folder``, atomically, and write the manifest last.

    If another builder (another node on a shared filesystem) completes the same cache first, its cache is
    returned (``reused=True``) and this build's arrays are discarded.

    Args:
        folder: The cache folder (created if needed).
        root: The data root that ``sources`` paths are relative to.
        params: Preprocessing parameters, recorded in the manifest and checked on load.
        sources: ``{split: files}`` in the order the arrays should have.
        class_to_idx: Class name -> index, recorded in the manifest.
        channels: 1 or 3.
        size: Stored ``(H, W)``.
        on_bad_file: ``skip``: leave bad files out and warn; anything else (``error``): raise one error listing
            every bad file. Checked where the user sets it (``ImageFolderDataModule``); never a silent drop here.
        workers: Decoding processes; 0 or 1 decodes in this process.

    Raises:
        ValueError: bad files under ``on_bad_file: error``, or a split left empty by skipped files.
    """
    start = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(folder)
    token = _build_token()
    row = channels * size[0] * size[1]
    written: dict[str, tuple[Path, Path, list[SourceFile]]] = {}
    bad: list[dict] = []
    try:
        for split, files in sources.items():
            images_tmp = folder / f".{split}.u8.{token}.tmp"
            kept: list[SourceFile] = []
            with open(images_tmp, "wb") as f:
                f.truncate(len(files) * row)
            array = np.memmap(images_tmp, dtype=np.uint8, mode="r+", shape=(len(files), channels, *size))
            results = _decode_all([root / f.path for f in files], channels, size, workers, f"caching {split}")
            for source, (image, reason) in zip(files, results, strict=True):
                if image is None:
                    bad.append({"path": source.path, "reason": reason})
                    continue
                array[len(kept)] = image  # (C, H, W) uint8; kept files are packed to the front
                kept.append(source)
            array.flush()
            del array
            os.truncate(images_tmp, len(kept) * row)
            labels_tmp = folder / f".{split}.labels.npy.{token}.tmp"
            with open(labels_tmp, "wb") as f:
                np.save(f, np.array([s.label for s in kept], dtype=np.int64))
            written[split] = (images_tmp, labels_tmp, kept)
        if bad and on_bad_file != "skip":  # only an explicit skip leaves files out
            raise bad_files_error(root, bad)
        for split, (_, _, kept) in written.items():
            missing = sorted(set(class_to_idx.values()) - {s.label for s in kept})
            if split == "train" and missing:
                names = [n for n, i in class_to_idx.items() if i in missing]
                raise BadInputError(
                    f"classes {names} have no readable training images left after data.on_bad_file=skip; a class"
                    f" is never dropped silently. {bad_files_error(root, bad)}"
                )
        shapes = {split: [len(kept), channels, *size] for split, (_, _, kept) in written.items()}
        mean, std = channel_stats(MemmapImages(written["train"][0], shapes["train"]).array())
        finished = load_cache(folder, params, sources)
        if finished is not None:  # another builder completed the same cache meanwhile: keep its files
            log.info("image cache %s was completed by another process meanwhile; using it", folder)
            return finished
        (folder / MANIFEST).unlink(missing_ok=True)  # from here on the folder is untrusted until the new manifest
        for split, (images_tmp, labels_tmp, _) in written.items():
            os.replace(images_tmp, folder / f"{split}.u8")
            os.replace(labels_tmp, folder / f"{split}.labels.npy")
    finally:
        for images_tmp, labels_tmp, _ in written.values():
            images_tmp.unlink(missing_ok=True)
            labels_tmp.unlink(missing_ok=True)
        for leftover in folder.glob(f".*.{token}.tmp"):  # a split interrupted before it was recorded
            leftover.unlink(missing_ok=True)

    manifest = {
        "version": CACHE_VERSION,
        "params": params,
        "class_to_idx": class_to_idx,
        "mean": mean,
        "std": std,
        "skipped": bad,
        "splits": {
            split: {
                "shape": shapes[split],
                "listing_digest": listing_digest(sources[split]),
                "files": [asdict(s) for s in kept],
            }
            for split, (_, _, kept) in written.items()
        },
    }
    write_json(folder / MANIFEST, manifest)  # last: only now is the folder trusted
    log.info(
        "built image cache %s (%d images) in %.1f s",
        folder,
        sum(s[0] for s in shapes.values()),
        time.perf_counter() - start,
    )
    return ImageCache(folder, manifest, reused=False)
