"""Data leakage: the same image (byte for byte) in more than one split, found by the cache's content hashes.

A test score is only held-out if no test image was also trained on. Datasets collected by hand often hold
copies (one photo saved twice, a ``train`` and a ``test`` folder cut from overlapping exports); the cache
records each file's SHA-256 when it decodes it, so finding them costs a dictionary pass, and every fit
warns.
"""

from __future__ import annotations

import warnings

from .cache import ImageCache
from .listing import shown

#: Leaks shown in the fit's warning (``inspect`` lists all of them).
EXAMPLES = 3


def find_leaks(cache: ImageCache) -> list[dict]:
    """Every content found in more than one split: ``[{"sha256", "files": {split: [paths]}}]``, in the order
    of their first file (train first)."""
    by_hash: dict[str, dict[str, list[str]]] = {}
    for split in cache.splits:
        for digest, path in zip(cache.column(split, "sha256"), cache.column(split, "path"), strict=True):
            by_hash.setdefault(digest, {}).setdefault(split, []).append(path)
    return [{"sha256": digest, "files": files} for digest, files in by_hash.items() if len(files) > 1]


def describe(leak: dict) -> str:
    """``train/a/1.png = test/a/7.png`` for one leak (names that aren't UTF-8 shown with ``\\xNN``)."""
    return " = ".join(shown(path) for paths in leak["files"].values() for path in paths)


def warn_leakage(cache: ImageCache) -> list[dict]:
    """Warn with the count and a few examples if any image sits in more than one split; returns the leaks."""
    leaks = find_leaks(cache)
    if leaks:
        examples = "; ".join(describe(leak) for leak in leaks[:EXAMPLES])
        more = f"; and {len(leaks) - EXAMPLES} more" if len(leaks) > EXAMPLES else ""
        warnings.warn(
            f"data leakage: {len(leaks)} image(s) appear in more than one split (identical files): {examples}{more}."
            " Scores on a split that shares images with train are not held-out: remove the copies from one split.",
            stacklevel=2,
        )
    return leaks
