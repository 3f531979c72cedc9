"""Fold assignment: stratified by the label, seeded, and copies never split across folds.

Copies are found with the hashes the engine's image cache records for its leakage check: identical files by
SHA-256, near-duplicates by pHash within :data:`~litstarter._engine.images.leakage.NEAR_DISTANCE` bits. Every
pair joins one group (union-find, so chains join too), and scikit-learn's ``StratifiedGroupKFold`` puts each
group whole into one fold while keeping the class proportions of every fold close to the whole's.
"""

from __future__ import annotations

import numpy as np

from litstarter._engine.errors import BadInputError
from litstarter._engine.images.leakage import NEAR_DISTANCE
from litstarter._engine.images.perceptual import close_pairs, from_hex


class UnionFind:
    """Groups of item indices, joined pair by pair.

    Args:
        n: Number of items.
    """

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        """The root of ``i``'s group (halving the path on the way)."""
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, i: int, j: int) -> None:
        """Put ``i`` and ``j`` into one group."""
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def groups(self) -> np.ndarray:
        """``(n,)`` group id of every item (the smallest index in its group)."""
        return np.array([self.find(i) for i in range(len(self.parent))], dtype=np.int64)


def copy_groups(sha256: list[str], phash: list[str] | None, near_distance: int = NEAR_DISTANCE) -> np.ndarray:
    """``(n,)`` group ids: identical contents (same SHA-256) and near-duplicates (pHashes within
    ``near_distance`` bits; ``""`` is a flat image, which pairs with nothing) share one.

    Args:
        sha256: Each item's content hash.
        phash: Each item's pHash as 16 hex digits, or ``None`` to join identical contents only.
        near_distance: The largest Hamming distance of a near-duplicate pair.
    """
    groups = UnionFind(len(sha256))
    first: dict[str, int] = {}
    for i, digest in enumerate(sha256):
        groups.join(first.setdefault(digest, i), i)
    if phash is not None:
        hashes, where = from_hex(phash)
        for i, j, _ in zip(*close_pairs(hashes, hashes, near_distance), strict=True):
            groups.join(int(where[i]), int(where[j]))
    return groups.groups()


def assign_folds(labels: np.ndarray, groups: np.ndarray, k: int, seed: int, names: list[str]) -> np.ndarray:
    """``(n,)`` fold of every item, 0..k-1: each group in one fold, classes stratified, seeded.

    Raises:
        BadInputError: a class with fewer distinct images than folds (named by ``names``).
    """
    from sklearn.model_selection import StratifiedGroupKFold

    labels = np.asarray(labels)
    for label in np.unique(labels):
        n = len(np.unique(groups[labels == label]))
        if n < k:
            raise BadInputError(
                f"class '{names[label]}' has {n} distinct image(s) (copies counted once) in the training data;"
                f" {k} folds need at least {k} per class: use fewer --folds or add images"
            )
    folds = np.empty(len(labels), dtype=np.int64)
    splitter = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    for fold, (_, held_out) in enumerate(splitter.split(np.zeros(len(labels)), labels, groups)):
        folds[held_out] = fold
    return folds
