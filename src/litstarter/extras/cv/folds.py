"""Fold assignment: stratified by the label, seeded, and copies never split across folds.

Copies are found with the hashes the engine's image cache records for its leakage check: identical files by
SHA-256, near-duplicates by pHash within :data:`~litstarter._engine.images.leakage.NEAR_DISTANCE` bits. Every
pair joins one group (union-find, so chains join too), and scikit-learn's ``StratifiedGroupKFold`` puts each
group whole into one fold while keeping the class proportions of every fold close to the whole's.
"""

from __future__ import annotations

import numpy as np

from litstarter._engine.images.leakage import NEAR_DISTANCE
from litstarter._engine.images.perceptual import close_pairs, from_hex
from litstarter.errors import BadInputError


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
    """``(n,)`` fold of every item, 0..k-1: each group in one fold, classes stratified, seeded (label sets: see
    :func:`label_set_folds`).

    Raises:
        BadInputError: a class with fewer distinct images than folds (named by ``names``).
    """
    from sklearn.model_selection import StratifiedGroupKFold

    labels = np.asarray(labels)
    if labels.ndim == 2:  # (n, K) label sets: no single class to stratify by
        return label_set_folds(labels, groups, k, seed, names)
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


#: Seeded draws of the iterative stratification a label-set split tries, keeping the one closest to the pool.
DRAWS = 16


def label_set_folds(targets: np.ndarray, groups: np.ndarray, k: int, seed: int, names: list[str]) -> np.ndarray:
    """``(n,)`` fold of every item of ``(n, K)`` 0/1 label sets, 0..k-1: each group of copies in one fold, every
    label's frequency stratified by iterative stratification over the groups (a group holds each label any member
    has; :func:`litstarter._engine.images.label_sets.stratify`, the multi-label splits' own). Its greedy draw can
    leave one fold a few images large, which moves every label's frequency there at once, so :data:`DRAWS` seeded
    draws are made and the one whose worst label frequency is closest to the pool's is kept.

    Raises:
        BadInputError: a label held by fewer distinct images than folds (named by ``names``).
    """
    from litstarter._engine.images.label_sets import stratify

    _, inverse = np.unique(groups, return_inverse=True)
    held = np.zeros((inverse.max() + 1, targets.shape[1]), dtype=np.float64)  # (groups, K)
    np.maximum.at(held, inverse, (targets > 0).astype(np.float64))
    for name, count in zip(names, held.sum(axis=0).astype(int), strict=True):
        if 0 < count < k:
            raise BadInputError(
                f"label '{name}' is on {count} distinct image(s) (copies counted once) in the training data;"
                f" {k} folds need at least {k} per label: use fewer --folds or add images"
            )
    positives, best, best_gap = targets > 0, None, np.inf
    for draw in range(DRAWS):
        chosen = stratify(held, {str(fold): 1.0 / k for fold in range(k)}, seed * DRAWS + draw)
        folds = np.array([int(fold) for fold in chosen], dtype=np.int64)[inverse]
        gap = max(np.abs(positives[folds == f].mean(axis=0) - positives.mean(axis=0)).max() for f in range(k))
        if gap < best_gap:
            best, best_gap = folds, gap
    return best
