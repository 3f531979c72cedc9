"""Data leakage: the same image in more than one split, byte for byte (content hashes) or nearly (perceptual hashes).

A test score is only held-out if no test image was also trained on. Datasets collected by hand often hold
copies (one photo saved twice, a ``train`` and a ``test`` folder cut from overlapping exports), and copies
re-encoded, resized or cropped a little. The cache records each file's SHA-256 and the 64-bit pHash of its cached
pixels (:mod:`.perceptual`) when it decodes it, so finding both costs no decode, and every fit warns with the
pairs ``inspect`` lists.

``NEAR_DISTANCE`` (10 of 64 bits) was measured on crops of real photos (by the inspect extra's benchmark:
scikit-learn's two sample photos, 200 crops of 60-260 px, at image sizes 16, 64 and 224): a re-saved PNG is found
always, a JPEG at quality 75 for 97.5-98%, a resize to 80% for 98.5-100%, a 5% crop for 91.5-93%; of the 44,850
pairs of 300 other crops, 14-16 came within 10 bits, of which 4-6 overlap by under half and 1 not at all.
"""

from __future__ import annotations

import warnings

from .cache import ImageCache
from .listing import shown
from .perceptual import close_pairs, from_hex

#: Leaks shown in the fit's warning (``inspect`` lists all of them).
EXAMPLES = 3
#: Images in two splits whose pHashes differ in at most this many of 64 bits are reported as near-duplicates.
NEAR_DISTANCE = 10


def find_leaks(cache: ImageCache) -> list[dict]:
    """Every content found in more than one split: ``[{"sha256", "files": {split: [paths]}}]``, in the order
    of their first file (train first)."""
    by_hash: dict[str, dict[str, list[str]]] = {}
    for split in cache.splits:
        for digest, path in zip(cache.column(split, "sha256"), cache.column(split, "path"), strict=True):
            by_hash.setdefault(digest, {}).setdefault(split, []).append(path)
    return [{"sha256": digest, "files": files} for digest, files in by_hash.items() if len(files) > 1]


def find_near_leaks(cache: ImageCache, max_distance: int = NEAR_DISTANCE) -> list[dict]:
    """Every pair of files in two splits whose pHashes are within ``max_distance`` bits and whose bytes differ
    (identical files are :func:`find_leaks`'; flat images have no pHash and pair with nothing):
    ``[{"distance", "files": {split: path, other split: path}}]``, closest first, then in split and file order."""
    splits = cache.splits
    hashes = {split: from_hex(cache.column(split, "phash")) for split in splits}  # (hashes, their file indices)
    paths, sha = ({split: cache.column(split, key) for split in splits} for key in ("path", "sha256"))
    found = []
    for n, first in enumerate(splits):
        for second in splits[n + 1 :]:
            (a, at_a), (b, at_b) = hashes[first], hashes[second]
            for i, j, distance in zip(*close_pairs(a, b, max_distance), strict=True):
                i, j = at_a[i], at_b[j]  # file indices in each split
                if sha[first][i] != sha[second][j]:
                    files = {first: paths[first][i], second: paths[second][j]}
                    found.append({"distance": int(distance), "files": files})
    return sorted(found, key=lambda pair: pair["distance"])  # stable: split and file order within a distance


def describe(leak: dict) -> str:
    """``train/a/1.png = test/a/7.png`` for one leak, ``train/a/1.png ~ test/a/7.jpg (distance 4)`` for a near one
    (names that aren't UTF-8 shown with ``\\xNN``)."""
    if "distance" in leak:
        return " ~ ".join(shown(path) for path in leak["files"].values()) + f" (distance {leak['distance']})"
    return " = ".join(shown(path) for paths in leak["files"].values() for path in paths)


def _examples(leaks: list[dict]) -> str:
    more = f"; and {len(leaks) - EXAMPLES} more" if len(leaks) > EXAMPLES else ""
    return "; ".join(describe(leak) for leak in leaks[:EXAMPLES]) + more


def warn_leakage(cache: ImageCache) -> tuple[list[dict], list[dict]]:
    """Warn with the count and a few examples if any image sits in more than one split, identical or nearly;
    returns both lists (the exact leaks, the near pairs)."""
    leaks, near = find_leaks(cache), find_near_leaks(cache)
    if leaks:
        warnings.warn(
            f"data leakage: {len(leaks)} image(s) appear in more than one split (identical files): {_examples(leaks)}."
            " Scores on a split that shares images with train are not held-out: remove the copies from one split.",
            stacklevel=2,
        )
    if near:
        warnings.warn(
            f"data leakage: {len(near)} pair(s) of images in different splits are near-duplicates (re-encoded,"
            f" resized or slightly cropped copies; perceptual hashes within {NEAR_DISTANCE} of 64 bits):"
            f" {_examples(near)}. Remove one of each pair from a split (or move both into the same one).",
            stacklevel=2,
        )
    return leaks, near
