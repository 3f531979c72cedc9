"""Train on some of a dataset's classes: pick them by name, relabel them 0..K-1 in the order given."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from litstarter.errors import UsageError


def select_classes(available: Sequence[str], classes: Sequence[str | int] | None, source: str) -> list[str]:
    """The class names to keep, in the order given (``classes`` is ``None``: all of ``available``, as they are).

    Numbers are read as names, so ``[5, 6]`` selects the digits classes ``"5"`` and ``"6"``.

    Args:
        available: Every class name of the data, in label order.
        classes: The names to keep, or ``None``.
        source: What the classes come from (e.g. ``"data.root 'x/'"``), for the error messages.

    Raises:
        ValueError: A name is unknown (the message lists the valid ones), given twice, or fewer than 2 remain.
    """
    if classes is None:
        return list(available)
    names = [str(c) for c in classes]
    unknown = [name for name in names if name not in available]
    if unknown:
        raise UsageError(f"data.classes: {unknown} are not classes of {source}; expected names from {list(available)}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UsageError(f"data.classes names {repeated} more than once; give each class once")
    if len(names) < 2:
        raise UsageError(f"data.classes must name at least 2 classes to classify, got {names}")
    return names


def relabel(labels: np.ndarray, available: Sequence[str], selected: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(keep, new_labels)``: which samples belong to ``selected`` and their labels as indices into ``selected``.

    Args:
        labels: ``(N,)`` indices into ``available``.
        available: Every class name, in label order.
        selected: The kept names (from :func:`select_classes`).

    Returns:
        A boolean mask ``(N,)`` and the kept samples' new labels ``(keep.sum(),)`` int64.
    """
    new_index = np.full(len(available), -1, dtype=np.int64)  # old label -> new label, -1 = dropped
    for new, name in enumerate(selected):
        new_index[list(available).index(name)] = new
    mapped = new_index[np.asarray(labels, dtype=np.int64)]
    keep = mapped >= 0
    return keep, mapped[keep]
