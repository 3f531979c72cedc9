"""Building the image cache: decode every file once (in a pool for large folders), write atomically, manifest last.

See :mod:`litstarter._engine.images.cache` for the folder's contents and the trust rule. Bad files are collected, all
of them: ``on_bad_file: error`` stops with one message listing every one; ``skip`` leaves them out and lists
them in the manifest.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import multiprocessing
import os
import time
import warnings
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm import tqdm

from litstarter.errors import BadInputError

from ..atomic_io import atomic_write
from ..leftovers import owner_tag
from ..targets import TargetKind, target_kind
from .cache import ImageCache, MemmapImages, OnBadFile, listing_digest, load_cache, targets_file
from .listing import shown
from .manifest import CACHE_VERSION, MANIFEST, array_checksums, as_columns, file_checksum, manifest_text, written_digest
from .own_size import own_size_decoder
from .perceptual import as_hex, phash_batch
from .preprocess import try_load_image
from .splits import SourceFile
from .stats import channel_stats

log = logging.getLogger(__name__)


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


def decode_file(
    path: Path, channels: int, size: tuple[int, int], interpolation: str = "bilinear"
) -> tuple[np.ndarray | None, str | None, dict]:
    """``(image (C, H, W) uint8, None, facts)`` or ``(None, reason, {})``; facts are the file's original
    ``width``, ``height`` and PIL ``mode`` and the SHA-256 of its bytes (for the leakage check: identical files;
    the pHash of near-duplicates is computed from the written array, a batch at a time, by ``_decode_split``)."""
    image, reason = try_load_image(path, channels, size, interpolation)
    if image is None:
        return None, reason, {}
    data = Path(path).read_bytes()  # just decoded: read from the page cache
    with Image.open(path) as header:  # header only; the pixels were decoded above
        facts = {"width": header.width, "height": header.height, "mode": header.mode}
    return image, None, {**facts, "sha256": hashlib.sha256(data).hexdigest()}


def decode_pair(
    item: tuple[Path, object], channels: int, size: tuple[int, int], interpolation: str, kind: TargetKind
) -> tuple[np.ndarray | None, str | None, dict, np.ndarray | None]:
    """:func:`decode_file` of ``item``'s image, and for a kind whose targets are files (a mask) its target through the
    image's geometry: ``(image, None, facts, target)``, or ``(None, reason, {}, None)`` when either is bad."""
    path, target = item
    image, reason, facts = decode_file(path, channels, size, interpolation)
    if image is None or not kind.decoded:
        return image, reason, facts, None
    with Image.open(path) as header:  # the EXIF orientation load_image applied, from the header alone
        orientation = header.getexif().get(0x0112, 1)
    decoded, reason = kind.decode(target, (facts["width"], facts["height"]), orientation, size)
    return (image, None, facts, decoded) if reason is None else (None, reason, {}, None)


def _decode_all(
    items: list[tuple[Path, object]],
    channels: int,
    size: tuple[int, int],
    workers: int,
    desc: str,
    interpolation: str,
    kind: TargetKind,
    decoder=None,
) -> Iterator[tuple[np.ndarray | None, str | None, dict, np.ndarray | None]]:
    """:func:`decode_pair` (or ``decoder``, which takes its arguments) over ``items`` in order, in this process or a
    pool of ``workers`` processes."""
    decoder = decoder or decode_pair
    decode = functools.partial(decoder, channels=channels, size=size, interpolation=interpolation, kind=kind)
    with tqdm(total=len(items), desc=desc, unit="img", disable=None, leave=False) as bar:
        if workers <= 1:
            for item in items:
                yield decode(item)
                bar.update()
            return
        # spawn, not fork: the parent holds torch threads, and the worker needs only numpy and Pillow.
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for result in pool.imap(decode, items, chunksize=max(1, min(64, len(items) // (8 * workers)))):
                yield result
                bar.update()


def _raw_array(path: Path, shape: tuple[int, ...]) -> np.memmap:
    """A uint8 memory map of ``shape`` in a new file at ``path`` (a zero-length file for no rows)."""
    with open(path, "wb") as f:
        f.truncate(int(np.prod(shape)))
    return np.memmap(path, dtype=np.uint8, mode="r+", shape=shape) if shape[0] else np.zeros(shape, np.uint8)


def _decode_split(
    folder: Path,
    root: Path,
    split: str,
    files: list[SourceFile],
    channels: int,
    size: tuple[int, int],
    workers: int,
    bad: list[dict],
    interpolation: str = "bilinear",
    kind: TargetKind | None = None,
    decoder=None,
) -> tuple[Path, Path | None, list[dict]]:
    """Decode one split into owner-tagged temporary arrays (the images; a decoded kind's targets too); returns them
    (``None`` for targets the kind stacks later) and the kept files' records (``decoder``: as :func:`_decode_all`)."""
    kind = kind or target_kind("class")
    tag = owner_tag()
    images_tmp, targets_tmp = folder / f".{split}.u8.{tag}.tmp", folder / f".{split}.{targets_file(kind)}.{tag}.tmp"
    array = _raw_array(images_tmp, (len(files), channels, *size))
    targets = _raw_array(targets_tmp, (len(files), *size)) if kind.storage == "pixels" else None
    rows: list[np.ndarray] = []  # kind.storage "rows": each kept image's rows, its index first
    kept: list[dict] = []
    items = [(root / f.path, f.target) for f in files]
    results = _decode_all(items, channels, size, workers, f"caching {split}", interpolation, kind, decoder)
    for source, (image, reason, facts, target) in zip(files, results, strict=True):
        if image is None:
            bad.append({"path": source.path, "reason": reason})
            continue
        array[len(kept)] = image  # (C, H, W) uint8; kept files are packed to the front
        if targets is not None:
            targets[len(kept)] = target  # (H, W) uint8
        elif kind.storage == "rows":
            rows.append(np.column_stack([np.full(len(target), len(kept), np.float32), target]).astype(np.float32))
        kept.append({**asdict(source), **facts})
    for record, value in zip(kept, phash_batch(array[: len(kept)]), strict=True):  # from the cached pixels
        record["phash"] = as_hex(value)
    for written in (array, targets):
        if isinstance(written, np.memmap):
            written.flush()
    del array, targets  # the maps closed before their files are cut to the kept rows
    os.truncate(images_tmp, len(kept) * channels * size[0] * size[1])
    if kind.storage == "pixels":
        os.truncate(targets_tmp, len(kept) * size[0] * size[1])
    elif kind.storage == "rows":
        with open(targets_tmp, "wb") as f:
            np.save(f, np.concatenate(rows) if rows else np.zeros((0, 1 + kind.row_width), np.float32))
    return images_tmp, targets_tmp if kind.decoded else None, kept


def _write_targets(folder: Path, split: str, kept: list[dict], kind: TargetKind, names: list[str]) -> Path:
    """The kept files' targets as the kind stacks them, in an owner-tagged temporary ``.npy``."""
    targets_tmp = folder / f".{split}.targets.npy.{owner_tag()}.tmp"
    with open(targets_tmp, "wb") as f:
        np.save(f, kind.stack([record["target"] for record in kept], names))
    return targets_tmp


def _check_classes_kept(root: Path, train: np.ndarray, kind: TargetKind, names: list[str], bad: list[dict]) -> None:
    """Refuse a class (label) the train split has no image of: left so by ``data.on_bad_file=skip`` (naming the bad
    files), or by the split itself (a label set's rare label carved into val or test: one line)."""
    missing = kind.empty(train, names)
    if missing and bad:
        plural = "classes" if kind.noun == "class" else f"{kind.noun}s"
        raise BadInputError(
            f"{plural} {missing} have no readable training images left after data.on_bad_file=skip; a"
            f" {kind.noun} is never dropped silently. {bad_files_error(root, bad)}"
        )
    if missing:
        raise BadInputError(
            f"data.root '{root}': {kind.empty_warning(train, names)}; a {kind.noun} is never dropped silently"
        )


def _split_entry(
    files: list[SourceFile], images: Path, targets: Path, kept: list[dict], shape: list[int], decoded: bool
) -> dict:
    """A split's manifest entry: its shape, the listing it was built from, its files' records, its checksums (a
    decoded kind's ``(N, H, W)`` targets by blocks, as the images)."""
    n, _, h, w = shape
    sums = array_checksums(targets, n * h * w) if decoded else file_checksum(targets)
    checksums = {**array_checksums(images, int(np.prod(shape))), "targets": sums}
    entry = {"shape": shape, "listing_digest": listing_digest(files), "files": as_columns(kept), "checksums": checksums}
    if kept and "extent" in kept[0]:  # images kept at their own size (own_size.py): where each really is
        entry["extents"] = [record["extent"] for record in kept]
    return entry


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
    kind: TargetKind | None = None,
) -> ImageCache:
    """Decode every source file into ``folder``, atomically, and write the manifest last.

    If another builder (another node on a shared filesystem) completes the same cache first, its cache is
    returned (``reused=True``) and this build's arrays are discarded.

    Args:
        folder: The cache folder (created if needed).
        root: The data root that ``sources`` paths are relative to.
        params: Preprocessing parameters, recorded in the manifest and checked on load; its ``interpolation``
            (``bilinear`` when absent) is the resize filter; its ``tiles`` keep each image at its own size, padded to
            ``size`` (:mod:`.own_size`).
        sources: ``{split: files}`` in the order the arrays should have.
        class_to_idx: Class name -> index, recorded in the manifest (classes, labels or target columns).
        channels: 1 or 3.
        size: Stored ``(H, W)``.
        on_bad_file: ``skip``: leave bad files out and warn; anything else (``error``): raise one error listing
            every bad file. Checked where the user sets it (``ImageFolderDataModule``); never a silent drop here.
        workers: Decoding processes; 0 or 1 decodes in this process.
        kind: The targets' kind: it stacks each split's targets into ``<split>.targets.npy``; ``None``: classes.

    Raises:
        BadInputError: bad files under ``on_bad_file: error``, or a class left without training images.
    """
    start = time.perf_counter()
    kind = kind or target_kind("class")
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, tuple[Path, Path, list[dict]]] = {}
    bad: list[dict] = []
    names = list(class_to_idx)
    decoder = own_size_decoder(params, kind, decode_pair)  # None: the cover resize and centre crop to size
    interpolation = params.get("interpolation", "bilinear")
    try:
        for split, files in sources.items():
            images_tmp, targets_tmp, kept = _decode_split(
                folder, root, split, files, channels, size, workers, bad, interpolation, kind, decoder
            )
            written[split] = (images_tmp, targets_tmp or _write_targets(folder, split, kept, kind, names), kept)
        if bad and on_bad_file != "skip":  # only an explicit skip leaves files out
            raise bad_files_error(root, bad)
        if not kind.decoded:
            _check_classes_kept(root, np.load(written["train"][1]), kind, names, bad)
        shapes = {split: [len(kept), channels, *size] for split, (_, _, kept) in written.items()}
        mean, std = channel_stats(MemmapImages(written["train"][0], shapes["train"]).array())
        splits = {
            split: _split_entry(sources[split], *written[split], shapes[split], kind.storage == "pixels")
            for split in written
        }
        finished = load_cache(folder, params, sources, class_to_idx, quiet=True)
        if finished is not None:  # another builder completed the same cache meanwhile: keep its files
            log.info("image cache %s was completed by another process meanwhile; using it", folder)
            return finished
        (folder / MANIFEST).unlink(missing_ok=True)  # from here on the folder is untrusted until the new manifest
        for split, (images_tmp, targets_tmp, _) in written.items():
            os.replace(images_tmp, folder / f"{split}.u8")
            os.replace(targets_tmp, folder / f"{split}.{targets_file(kind)}")
    finally:
        for leftover in folder.glob(f".*.{owner_tag()}.tmp"):  # ours, also of a split interrupted mid-way
            leftover.unlink(missing_ok=True)
    manifest = {
        "version": CACHE_VERSION,
        "params": params,
        "target_kind": kind.name,
        "class_to_idx": class_to_idx,
        "mean": mean,
        "std": std,
        "skipped": bad,
        "splits": splits,
    }
    text = manifest_text(manifest)
    manifest["digest"] = written_digest(text)[1]  # as a reuse reads it back
    atomic_write(folder / MANIFEST, lambda tmp: tmp.write_text(text))  # last: only now is the folder trusted
    log.info(
        "built image cache %s (%d images) in %.1f s",
        folder,
        sum(s[0] for s in shapes.values()),
        time.perf_counter() - start,
    )
    return ImageCache(folder, manifest, reused=False)
