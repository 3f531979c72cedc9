"""The uint8 memory-mapped image cache: decode, convert and resize each file once; read raw pixels after.

One cache folder holds, per split, ``<split>.u8`` (raw uint8 ``(N, C, H, W)``, C order, memory-mapped) and
``<split>.targets.npy`` (the split's targets, as their kind stacks them: :mod:`litstarter._engine.targets`), plus
``manifest.json`` (see :mod:`litstarter._engine.images.manifest`): each source file with its listing facts (target,
size, mtime, ctime, inode) and what decoding found (original size, mode, SHA-256 of the bytes, 64-bit pHash of the
cached pixels), the targets' kind, ``class_to_idx``, the preprocessing parameters, the train split's per-channel mean
and std, any skipped bad files, block checksums of the arrays, and a checksum of the manifest's own text (so no value in
it is trusted after a hand edit).

Trust rule: a build decodes into temporary files, deletes the manifest just before it renames its arrays into
place, and writes the new manifest last. On load the manifest must be well-formed, match the current file
listing, parameters and classes, every array must have the size it declares, and a sample of its blocks (all
of them with ``verify="full"``) must match their checksums; anything else means "rebuild", with a log line.
A file edited in place with its old mtime put back (``cp -p``, ``rsync -a``) still shows: its ctime (and,
after ``rsync``'s rename, its inode) changed.

Several builders may share a folder (one per node on a shared filesystem, where ``prepare_data`` runs on every
node's local rank 0): temporary names carry the owner tag ``<pid>@<host>`` (:mod:`litstarter._engine.leftovers`), so
no builder touches another's, a builder that finds a valid manifest written meanwhile discards its own arrays
and uses that cache, and a killed builder's leftovers are removed by the next run once its process is gone
(another host's only after a day).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from ..leftovers import remove_stale
from ..targets import target_kind
from ..targets.rows import RaggedRows
from .manifest import (
    MANIFEST,
    as_records,
    blocks_to_verify,
    digest_problem,
    file_checksum,
    manifest_problem,
    verify_blocks,
    verify_deadline,
    version_problem,
)
from .splits import SPLIT_NAMES, SourceFile

log = logging.getLogger(__name__)

OnBadFile = Literal["error", "skip"]
Verify = Literal["sample", "full"]


def cache_key(params: dict) -> str:
    """A short digest of the preprocessing parameters: one cache folder per parameter set."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]


def targets_file(kind) -> str:
    """A split's targets file after ``<split>.``: ``targets.u8`` (raw ``(N, H, W)`` uint8) for a kind decoded with the
    images (masks), ``targets.npy`` for one stacked from the listing."""
    return "targets.u8" if kind.storage == "pixels" else "targets.npy"


def listing_digest(files: list[SourceFile]) -> str:
    """Digest of a split's file listing (paths, targets, sizes, mtimes, ctimes, inodes): any change shows."""
    digest = hashlib.sha256()
    for f in files:
        # surrogateescape: a file name that isn't valid UTF-8 is hashed as its raw bytes
        target = json.dumps(f.target)
        line = f"{f.path}\0{target}\0{f.size}\0{f.mtime_ns}\0{f.ctime_ns}\0{f.inode}\n"
        digest.update(line.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


class MemmapImages:
    """A read-only uint8 memory map, ``(N, C, H, W)`` images or ``(N, H, W)`` masks, opened lazily.

    It pickles as its path and shape, so DataLoader workers started by ``spawn``/``forkserver`` reopen the
    file instead of receiving a copy of the whole array.

    Args:
        path: The raw ``.u8`` file.
        shape: ``(N, C, H, W)`` or ``(N, H, W)``.
    """

    dtype = np.dtype(np.uint8)

    def __init__(self, path: str | os.PathLike, shape: tuple[int, ...]) -> None:
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

    @property
    def ndim(self) -> int:
        """The number of axes: 4 for images ``(N, C, H, W)``, 3 for masks ``(N, H, W)``."""
        return len(self.shape)

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
        check_seconds: When reused, the time spent checking it (manifest schema, parameters, listing digests,
            target checksums, sampled block checksums); ``benchmarks/data_pipeline.py`` prints it.
    """

    folder: Path
    manifest: dict
    reused: bool
    check_seconds: float = 0.0

    @property
    def splits(self) -> list[str]:
        """Split names in the cache, train, val, test (the manifest on disk has its keys sorted)."""
        return sorted(self.manifest["splits"], key=lambda s: SPLIT_NAMES.index(s) if s in SPLIT_NAMES else len(s))

    def images(self, split: str) -> MemmapImages:
        """The ``(N, C, H, W)`` uint8 images of a split, memory-mapped."""
        return MemmapImages(self.folder / f"{split}.u8", self.manifest["splits"][split]["shape"])

    def targets(self, split: str) -> np.ndarray | MemmapImages | RaggedRows:
        """A split's targets, ``N`` of them as their kind stored them: class indices ``(N,)`` int64; label sets and
        values ``(N, K)`` float32; masks ``(N, H, W)`` uint8, memory-mapped; boxes, each image's rows."""
        storage = target_kind(self.manifest["target_kind"]).storage
        n, _, h, w = self.manifest["splits"][split]["shape"]
        if storage == "pixels":
            return MemmapImages(self.folder / f"{split}.targets.u8", (n, h, w))
        stored = np.load(self.folder / f"{split}.targets.npy")
        return RaggedRows(stored, n) if storage == "rows" else stored

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
        """Bad files left out of the arrays: ``[{"path", "reason"}]``."""
        return self.manifest["skipped"]

    def extents(self, split: str) -> np.ndarray | None:
        """Each image's ``(h, w)`` within the stored size, ``(N, 2)`` int64, for images kept at their own size and
        padded (``data.tiles``: :mod:`.own_size`); ``None`` for a cache of one size throughout."""
        extents = self.manifest["splits"][split].get("extents")
        return None if extents is None else np.asarray(extents, dtype=np.int64).reshape(-1, 2)

    def files(self, split: str) -> list[dict]:
        """The records of a split's cached files, in array order (see ``manifest.FILE_FIELDS``)."""
        return as_records(self.manifest["splits"][split]["files"])

    def column(self, split: str, field: str) -> list:
        """One field of every cached file of a split, in array order (``column("train", "sha256")``)."""
        return self.manifest["splits"][split]["files"][field]


def _unusable(
    folder: Path,
    text: bytes,
    manifest,
    params: dict,
    sources: dict,
    class_to_idx: dict,
    verify: Verify,
    seed: int | None,
    started: float,
) -> str | None:
    """Why the cache in ``folder`` cannot be reused as it is (a phrase for the log), or ``None`` if it can;
    ``text`` is the manifest as read, ``manifest`` the same parsed."""
    older = version_problem(manifest)  # an older litstarter's cache: rebuilt, logged as information
    if older is not None:
        return older
    problem = manifest_problem(manifest)
    if problem is not None:
        return f"its {MANIFEST} is malformed ({problem})"
    if manifest["params"] != params:
        return "the preprocessing parameters differ"
    if manifest["class_to_idx"] != class_to_idx:
        return f"its class_to_idx {manifest['class_to_idx']} is not {class_to_idx}"
    if set(manifest["splits"]) != set(sources):
        return f"its splits {sorted(manifest['splits'])} are not {sorted(sources)}"
    for split, files in sources.items():
        if manifest["splits"][split]["listing_digest"] != listing_digest(files):
            return f"files of the {split} split were added, removed or changed"
    edited = digest_problem(text)  # after the checks that say more: a changed class, parameter or file
    if edited is not None:
        return f"its {MANIFEST} is malformed ({edited})"
    deadline = None if verify == "full" else verify_deadline(started)
    for split, entry in manifest["splits"].items():
        images = folder / f"{split}.u8"
        if not images.is_file() or images.stat().st_size != int(np.prod(entry["shape"])):
            return f"{images.name} is missing or not {int(np.prod(entry['shape']))} bytes"
        problem = _targets_problem(folder, split, entry, verify == "full", seed, deadline)
        if problem is not None:
            return problem
        if entry["shape"][0] == 0:
            continue
        indices = blocks_to_verify(len(entry["checksums"]["images"]), verify == "full", seed)
        bad = verify_blocks(images, entry["checksums"], indices, deadline)
        if bad is not None:
            return f"block {bad} of {images.name} does not match its checksum"
    return None


def _targets_problem(folder: Path, split: str, entry: dict, full: bool, seed, deadline) -> str | None:
    """Why a split's targets file cannot be trusted: missing, or off its checksum (a ``.npy`` whole; a decoded
    kind's ``.u8`` by its size and sampled blocks, as the images)."""
    sums = entry["checksums"]["targets"]
    if isinstance(sums, str):
        targets = folder / f"{split}.targets.npy"
        if not targets.is_file() or file_checksum(targets) != sums:
            return f"{targets.name} is missing or does not match its checksum"
        return None
    n, _, h, w = entry["shape"]
    targets = folder / f"{split}.targets.u8"
    if not targets.is_file() or targets.stat().st_size != n * h * w:
        return f"{targets.name} is missing or not {n * h * w} bytes"
    bad = verify_blocks(targets, sums, blocks_to_verify(len(sums["images"]), full, seed), deadline) if n else None
    return None if bad is None else f"block {bad} of {targets.name} does not match its checksum"


def load_cache(
    folder: Path,
    params: dict,
    sources: dict[str, list[SourceFile]],
    class_to_idx: dict[str, int],
    verify: Verify = "sample",
    seed: int | None = None,
    quiet: bool = False,
) -> ImageCache | None:
    """The cache in ``folder`` if it is well-formed, complete and matches ``params``, ``sources`` and
    ``class_to_idx``; else ``None``, after a log line saying why (none when there is no cache yet).

    Args:
        folder: The cache folder.
        params: The preprocessing parameters it must have been built with.
        sources: ``{split: files}`` as listed now.
        class_to_idx: The classes it must have.
        verify: ``sample``: check the first, the last and a few seeded blocks of each array against their
            checksums, within about 20 ms (or 5% of the time the reuse took before); ``full``: every block.
        seed: Seed for the sampled blocks; ``None``: fresh, so that repeated reuses cover every block.
        quiet: Don't log why it can't be reused (a builder checking whether another finished meanwhile).
    """
    started = time.perf_counter()
    remove_stale(folder.glob(".*.tmp"))
    try:
        text = (folder / MANIFEST).read_bytes()
        manifest = json.loads(text)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        if not quiet:
            log.warning("image cache %s: %s is unreadable (%s); rebuilding", folder, MANIFEST, error)
        return None
    reason = _unusable(folder, text, manifest, params, sources, class_to_idx, verify, seed, started)
    if reason is not None and not quiet:
        level = logging.WARNING if "malformed" in reason or "checksum" in reason or "bytes" in reason else logging.INFO
        log.log(level, "image cache %s: %s; rebuilding", folder, reason)
    if reason is not None:
        return None
    return ImageCache(folder, manifest, reused=True, check_seconds=time.perf_counter() - started)
