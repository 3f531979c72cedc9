"""A 64-bit perceptual hash (pHash) of a cached image, and the pairs of two hash sets within a Hamming distance.

The hash is computed from the ``(C, H, W)`` uint8 array the cache stores (already decoded, oriented, converted
and resized), so it costs no second decode: luma, box-averaged down to 32x32, a 2-D DCT-II, the 8x8 lowest
frequencies, and one bit per coefficient above their median (the DC term left out of the median, as
``imagehash.phash`` does). About 0.1 ms an image in numpy. Re-encoding, re-saving and resizing leave it
nearly unchanged; a small crop moves it a few bits; distinct photos differ in about half of the 64 bits.

Pairs are found by brute force (a vectorised XOR and popcount, in chunks) up to ``BRUTE_FORCE_PAIRS`` (about
10,000 x 10,000 images, ~0.7 s); beyond that by buckets (multi-index hashing: the 64 bits cut into 4 bands of 16;
two hashes within ``d`` bits agree within ``d // 4`` bits on at least one band, so each hash probes only the
buckets that close to its own bands). Both find exactly the same pairs.
"""

from __future__ import annotations

import functools

import numpy as np

#: Side of the grey thumbnail the DCT is taken of, and of the low-frequency block kept.
THUMB, KEEP = 32, 8
#: Above this many pairs (two splits' sizes multiplied) pairs are found by buckets instead of brute force.
BRUTE_FORCE_PAIRS = 10**8
#: Distances computed at once by brute force (a 32 MB block).
CHUNK_PAIRS = 1 << 22
#: Bands of the bucket search, and their width in bits.
BANDS, BAND_BITS = 4, 16
#: An image whose lowest frequencies carry less than this std (grey levels, 0..255) has no structure to hash: its
#: bits would be rounding noise, the same for every flat image whatever its colour, so it gets no hash (``""``).
FLAT_STD = 1.0
#: Luma weights (ITU-R 601-2, as PIL's ``convert("L")``) for a 3-channel array.
LUMA = np.array([0.299, 0.587, 0.114])
LUMA_32 = LUMA.astype(np.float32)


@functools.lru_cache(maxsize=16)
def box_weights(n: int, out: int) -> np.ndarray:
    """``(out, n)`` weights that average ``n`` samples into ``out`` equal boxes (fractional edges shared)."""
    edges = np.linspace(0.0, n, out + 1)
    starts, ends = edges[:-1, None], edges[1:, None]
    cells = np.arange(n)[None, :]
    overlap = np.clip(np.minimum(ends, cells + 1) - np.maximum(starts, cells), 0.0, None)
    return overlap / overlap.sum(axis=1, keepdims=True)


@functools.lru_cache(maxsize=1)
def _dct_matrix() -> np.ndarray:
    """The first ``KEEP`` rows of the (unnormalised) DCT-II matrix of size ``THUMB``."""
    k, n = np.arange(KEEP)[:, None], np.arange(THUMB)[None, :]
    return np.cos(np.pi * k * (2 * n + 1) / (2 * THUMB))


@functools.lru_cache(maxsize=16)
def _projection(n: int) -> np.ndarray:
    """``(KEEP, n)``: box-average ``n`` samples down to ``THUMB``, then the ``KEEP`` lowest DCT frequencies, in one
    matrix (so a hash is two small products: ``P_h @ grey @ P_w.T``)."""
    return (_dct_matrix() @ box_weights(n, THUMB)).astype(np.float32)


#: The orthonormal DCT's scale of each of the 64 coefficients, divided by THUMB: the root of the sum of the scaled
#: AC terms' squares is the thumbnail's std carried by its lowest frequencies (Parseval).
_F = np.where(np.arange(KEEP) == 0, np.sqrt(1 / THUMB), np.sqrt(2 / THUMB))
_ORTHONORMAL = (np.outer(_F, _F) / THUMB).ravel().astype(np.float32)
#: Bit weights of the 64 coefficients, first (DC) as the top bit.
_BITS = np.uint64(1) << np.arange(63, -1, -1, dtype=np.uint64)


def phash_batch(images: np.ndarray, chunk: int = 512) -> list[int | None]:
    """The 64-bit pHash of each ``(N, C, H, W)`` uint8 image (C = 1 or 3), as unsigned ints; ``None`` for a flat
    one (under ``FLAT_STD`` of low-frequency std). Vectorised over ``chunk`` images at a time: about 40 us an image
    at 73 x 73."""
    hashes: list[int | None] = []
    for start in range(0, len(images), chunk):
        pixels = np.asarray(images[start : start + chunk])  # (n, C, H, W) uint8
        weights = LUMA_32 if pixels.shape[1] == 3 else np.ones(1, np.float32)
        grey = np.einsum("nchw,c->nhw", pixels, weights, dtype=np.float32)  # (n, H, W) luma
        n, h, w = grey.shape
        low = (_projection(h) @ grey @ _projection(w).T).reshape(n, -1)  # (n, 64) lowest frequencies, DC first
        flat = np.sqrt(((low * _ORTHONORMAL)[:, 1:] ** 2).sum(axis=1)) < FLAT_STD
        median = np.partition(low[:, 1:], 31, axis=1)[:, 31]  # of the 63 AC terms
        values = ((low > median[:, None]) * _BITS).sum(axis=1, dtype=np.uint64)
        hashes += [None if is_flat else int(value) for is_flat, value in zip(flat, values, strict=True)]
    return hashes


def phash(image: np.ndarray) -> int | None:
    """:func:`phash_batch` of one ``(C, H, W)`` image."""
    return phash_batch(np.asarray(image)[None])[0]


def as_hex(value: int | None) -> str:
    """A hash as the 16 hex digits the manifest stores (``""``: none, a flat image)."""
    return "" if value is None else f"{value:016x}"


def from_hex(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The manifest's hex hashes as ``(hashes, where)``: a uint64 array of the files that have one, and their
    positions among ``values``."""
    where = np.array([n for n, v in enumerate(values) if v], dtype=np.int64)
    return np.array([int(values[n], 16) for n in where], dtype=np.uint64), where


def distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(len(a), len(b))`` Hamming distances between two uint64 hash arrays (vectorised popcount)."""
    return np.bitwise_count(a[:, None] ^ b[None, :])


Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]


def close_pairs(a: np.ndarray, b: np.ndarray, max_distance: int) -> Pairs:
    """Every ``(i, j)`` with ``popcount(a[i] ^ b[j]) <= max_distance``: ``(i, j, distance)`` arrays, sorted by
    ``i`` then ``j``; by brute force up to ``BRUTE_FORCE_PAIRS``, by buckets beyond."""
    if len(a) * len(b) <= BRUTE_FORCE_PAIRS:
        return brute_force_pairs(a, b, max_distance)
    return bucket_pairs(a, b, max_distance)


def brute_force_pairs(a: np.ndarray, b: np.ndarray, max_distance: int) -> Pairs:
    """:func:`close_pairs` by computing every distance, ``CHUNK_PAIRS`` at a time."""
    rows = max(1, CHUNK_PAIRS // max(1, len(b)))
    found = [(np.empty(0, np.int64),) * 3]
    for start in range(0, len(a), rows):
        d = distances(a[start : start + rows], b)  # (rows, len(b))
        i, j = np.nonzero(d <= max_distance)
        found.append((i + start, j, d[i, j].astype(np.int64)))
    return tuple(np.concatenate(column) for column in zip(*found, strict=True))


def bucket_pairs(a: np.ndarray, b: np.ndarray, max_distance: int, rows: int = 4096) -> Pairs:
    """:func:`close_pairs` by multi-index hashing (see the module docstring); ``rows`` of ``a`` probe at a time."""
    width = 1 << BAND_BITS
    probes = np.nonzero(np.bitwise_count(np.arange(width)) <= max_distance // BANDS)[0]  # flips within a band
    codes = [np.empty(0, np.int64)]
    for band in range(BANDS):
        shift = np.uint64(band * BAND_BITS)
        key_b = ((b >> shift) & np.uint64(width - 1)).astype(np.int64)
        key_a = ((a >> shift) & np.uint64(width - 1)).astype(np.int64)
        order = np.argsort(key_b, kind="stable")  # b's indices grouped by bucket
        counts = np.bincount(key_b, minlength=width)
        starts = np.cumsum(counts) - counts
        for first in range(0, len(a), rows):
            keys = (key_a[first : first + rows, None] ^ probes[None, :]).ravel()  # (rows * probes,) buckets
            owner = np.repeat(np.arange(first, first + len(keys) // len(probes)), len(probes))
            n = counts[keys]
            i = np.repeat(owner, n)
            within = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)  # position inside each bucket
            j = order[np.repeat(starts[keys], n) + within]
            close = np.bitwise_count(a[i] ^ b[j]) <= max_distance
            codes.append(i[close] * len(b) + j[close])
    i, j = np.divmod(np.unique(np.concatenate(codes)), max(1, len(b)))
    return i, j, np.bitwise_count(a[i] ^ b[j]).astype(np.int64)
