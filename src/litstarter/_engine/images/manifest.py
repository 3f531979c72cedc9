"""The image cache's ``manifest.json``: what it must contain, and checksums of the arrays it describes.

A manifest is read back only after :func:`manifest_problem` finds nothing wrong with its structure: any
malformed manifest (``[]``, ``null``, a missing or non-numeric ``shape``, an edited ``class_to_idx``, a ``std``
of 0, ...) means "rebuild the cache", never a crash. The manifest carries a checksum of its own text
(:func:`manifest_text`, :func:`digest_problem`), so that a value nothing else checks (the train split's ``mean``
and ``std``, which training and every export normalise with; the file records ``inspect`` reports) can't be
edited by hand and trusted. The arrays carry per-block SHA-256 checksums (128 bits kept); a reuse verifies a
sample of blocks (:func:`verify_blocks`), a full verify checks them all.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path

import numpy as np

from ..targets import TargetKind, kind_names, target_kind

MANIFEST = "manifest.json"
#: Bump when the preprocessing or the file format changes: older caches are then rebuilt (5: targets of any kind).
CACHE_VERSION = 5
#: Where the manifest's checksum of itself sits in its text: a top-level key (two spaces in; a JSON string
#: can't hold a raw newline, so nothing else in the text looks like this).
DIGEST_MARK = '\n  "digest": "'
DIGEST_LENGTH = 32
#: Checksum blocks are at least this large, and grow so that an array has at most MAX_BLOCKS of them.
MIN_BLOCK = 256 * 1024
MAX_BLOCKS = 512
#: Seeded blocks checked on each reuse, besides the first and the last ...
SAMPLED_BLOCKS = 4
#: ... as long as the check stays within the larger of this and VERIFY_SHARE of the time spent before it.
VERIFY_MIN_S = 0.020
VERIFY_SHARE = 0.05

#: Every cached file's record: its listing facts (checked for changes) and what decoding found. Stored by
#: column: a parse and a check of 50,000 records by row would cost a reuse more than everything else. The
#: ``target`` is plain JSON of its kind's shape (``object``: checked by the kind, :mod:`litstarter._engine.targets`).
FILE_FIELDS: dict[str, type] = {
    "path": str, "target": object, "size": int, "mtime_ns": int, "ctime_ns": int, "inode": int,
    "width": int, "height": int, "mode": str, "sha256": str, "phash": str,
}  # fmt: skip


class Malformed(ValueError):
    """A manifest whose structure is not the one written by this version."""


def _expect(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise Malformed(f"{where} should be {what}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_files(files, where: str, n: int, kind: TargetKind, num_classes: int) -> None:
    """``files`` is stored by column (``{field: [value per file]}``): fast to parse and to check."""
    _expect(isinstance(files, dict) and set(files) == set(FILE_FIELDS), where, f"an object of {sorted(FILE_FIELDS)}")
    for key, type_ in FILE_FIELDS.items():
        column = files[key]
        _expect(isinstance(column, list) and len(column) == n, f"{where}.{key}", f"a list of {n} values")
        if type_ is not object:
            _expect(set(map(type, column)) <= {type_}, f"{where}.{key}", f"a list of {n} {type_.__name__}s")
    valid = kind.valid
    _expect(all(valid(t, num_classes) for t in files["target"]), f"{where}.target", f"{kind.name} targets")


def as_columns(records: list[dict]) -> dict[str, list]:
    """File records (one dict per file) -> the manifest's ``{field: [value per file]}``."""
    return {key: [record[key] for record in records] for key in FILE_FIELDS}


def as_records(columns: dict[str, list]) -> list[dict]:
    """The manifest's ``{field: [value per file]}`` -> one dict per file."""
    keys = list(columns)
    return [dict(zip(keys, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def _check_split(entry, where: str, kind: TargetKind, num_classes: int) -> None:
    _expect(isinstance(entry, dict), where, "an object")
    shape = entry.get("shape")
    _expect(
        isinstance(shape, list) and len(shape) == 4 and all(_is_int(s) and s >= 0 for s in shape),
        f"{where}.shape",
        "[N, C, H, W] of non-negative ints",
    )
    _expect(shape[1] in (1, 3) and shape[2] > 0 and shape[3] > 0, f"{where}.shape", "1 or 3 channels of H, W > 0")
    _expect(isinstance(entry.get("listing_digest"), str), f"{where}.listing_digest", "a string")
    sums = entry.get("checksums")
    _expect(isinstance(sums, dict), f"{where}.checksums", "an object")
    block = sums.get("block_size")
    _expect(_is_int(block) and block > 0, f"{where}.checksums.block_size", "a positive int")
    blocks = sums.get("images")
    n_blocks = math.ceil(math.prod(shape) / block)
    _expect(
        isinstance(blocks, list) and len(blocks) == n_blocks and all(isinstance(b, str) for b in blocks),
        f"{where}.checksums.images",
        f"a list of {n_blocks} strings",
    )
    targets = sums.get("targets")
    blocks = (
        isinstance(targets, dict) and isinstance(targets.get("images"), list) and _is_int(targets.get("block_size"))
    )
    _expect(isinstance(targets, str) or blocks, f"{where}.checksums.targets", "a string or block checksums")
    _check_files(entry.get("files"), f"{where}.files", shape[0], kind, num_classes)


def version_problem(manifest) -> str | None:
    """Why a parsed manifest is of another cache version (an older litstarter wrote it: rebuild, nothing is wrong),
    or ``None``."""
    version = manifest.get("version") if isinstance(manifest, dict) else None
    if _is_int(version) and version != CACHE_VERSION:
        return f"it was written for cache version {version} (this litstarter writes {CACHE_VERSION})"
    return None


def manifest_problem(manifest) -> str | None:
    """What is structurally wrong with a parsed manifest, in one phrase; ``None`` if it is well-formed."""
    try:
        _expect(isinstance(manifest, dict), "the manifest", "a JSON object")
        _expect(manifest.get("version") == CACHE_VERSION, "version", str(CACHE_VERSION))
        _expect(isinstance(manifest.get("params"), dict), "params", "an object")
        _expect(manifest.get("target_kind") in kind_names(), "target_kind", f"one of {kind_names()}")
        kind = target_kind(manifest["target_kind"])
        classes = manifest.get("class_to_idx")
        _expect(
            isinstance(classes, dict) and sorted(classes.values()) == list(range(len(classes))) and len(classes) > 0,
            "class_to_idx",
            "an object of class name -> 0..K-1",
        )
        splits = manifest.get("splits")
        _expect(isinstance(splits, dict) and "train" in splits, "splits", "an object with a 'train' split")
        for split, entry in splits.items():
            _check_split(entry, f"splits.{split}", kind, len(classes))
        channels = splits["train"]["shape"][1]
        for key, low in (("mean", 0.0), ("std", 1e-9)):  # a std of 0 would divide every pixel by zero
            value = manifest.get(key)
            _expect(
                isinstance(value, list)
                and len(value) == channels
                and all(isinstance(v, int | float) and low <= v <= 1 for v in value),
                key,
                f"a list of {channels} numbers in [{low:g}, 1] (0..1 scale)",
            )
        skipped = manifest.get("skipped")
        _expect(
            isinstance(skipped, list)
            and all(
                isinstance(s, dict) and isinstance(s.get("path"), str) and isinstance(s.get("reason"), str)
                for s in skipped
            ),
            "skipped",
            "a list of {path, reason}",
        )
    except Malformed as problem:
        return str(problem)
    return None


def manifest_text(manifest: dict) -> str:
    """The manifest as written: indented JSON with a ``digest``, the checksum of this very text with the digest's
    own characters zeroed (checking it costs a 50,000-file reuse ~10 ms; re-serialising the parsed manifest to
    check it would cost ~90 ms)."""
    zeros = "0" * DIGEST_LENGTH
    text = json.dumps({**manifest, "digest": zeros}, indent=2, sort_keys=True) + "\n"
    return text.replace(DIGEST_MARK + zeros, DIGEST_MARK + _digest(text.encode()), 1)


def written_digest(data: bytes | str) -> tuple[int, str] | None:
    """Where a manifest's text holds its ``digest`` and what it says, or ``None`` if it has none."""
    raw = data.encode() if isinstance(data, str) else data
    at = raw.find(DIGEST_MARK.encode())
    if at < 0:
        return None
    start = at + len(DIGEST_MARK)
    return start, raw[start : start + DIGEST_LENGTH].decode("ascii", "replace")


def digest_problem(data: bytes) -> str | None:
    """Why a manifest's bytes do not match their own ``digest`` (an edit after they were written), or ``None``."""
    found = written_digest(data)
    if found is None:
        return "it has no digest of itself"
    start, written = found
    view = memoryview(data)
    digest = hashlib.sha256(view[:start])
    digest.update(b"0" * DIGEST_LENGTH)
    digest.update(view[start + DIGEST_LENGTH :])
    if digest.hexdigest()[:DIGEST_LENGTH] != written:
        return "it was edited after it was written (its digest does not match its contents)"
    return None


def block_size_for(nbytes: int) -> int:
    """The checksum block size for an array of ``nbytes``: >= MIN_BLOCK, a power of two, <= MAX_BLOCKS blocks."""
    size = MIN_BLOCK
    while size * MAX_BLOCKS < nbytes:
        size *= 2
    return size


def _digest(data) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def file_checksum(path: Path) -> str:
    """Checksum of a whole (small) file, e.g. a targets array."""
    return _digest(path.read_bytes())


def array_checksums(path: Path, nbytes: int) -> dict:
    """``{"block_size", "images": [one checksum per block]}`` of the first ``nbytes`` of ``path``."""
    block = block_size_for(nbytes)
    sums = []
    with open(path, "rb") as f:
        for _ in range(math.ceil(nbytes / block)):
            sums.append(_digest(f.read(block)))
    return {"block_size": block, "images": sums}


def blocks_to_verify(n_blocks: int, full: bool, seed: int | None) -> list[int]:
    """Block indices to check: all of them (``full``), or the first, the last and SAMPLED_BLOCKS drawn with
    ``seed`` (``None``: fresh entropy, so that repeated reuses end up covering every block)."""
    if full or n_blocks <= 2 + SAMPLED_BLOCKS:
        return list(range(n_blocks))
    others = np.random.default_rng(seed).choice(np.arange(1, n_blocks - 1), SAMPLED_BLOCKS, replace=False)
    return [0, n_blocks - 1, *sorted(int(i) for i in others)]


def verify_blocks(path: Path, checksums: dict, indices: list[int], deadline: float | None = None) -> int | None:
    """The first block among ``indices`` whose checksum differs, or ``None``.

    The first two indices are always checked; later ones only while ``time.perf_counter() < deadline``.
    """
    block = checksums["block_size"]
    expected = checksums["images"]
    with open(path, "rb") as f:
        for n, index in enumerate(indices):
            if deadline is not None and n >= 2 and time.perf_counter() > deadline:
                break
            f.seek(index * block)
            if _digest(f.read(block)) != expected[index]:
                return index
    return None


def verify_deadline(started: float) -> float:
    """When a sampled verify must stop: the larger of VERIFY_MIN_S and VERIFY_SHARE of the time since
    ``started`` (the beginning of the reuse), counted from now."""
    now = time.perf_counter()
    return now + max(VERIFY_MIN_S, VERIFY_SHARE * (now - started))
