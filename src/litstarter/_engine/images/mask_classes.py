"""The classes of masks given without ``classes.txt`` (or ``classes.json``), and whether they are binary.

In this order, and one line says which:

* ``data.binary_masks: true``: ``background`` and ``foreground`` (any non-zero value is the foreground).
* ``palette.json``: its classes, a dict's keys in order (``{"road": [128, 64, 128], ...}``), a list's positions.
* Masks holding only 0 and 255 (with 255 somewhere), or only 0 and 1 (with 1 somewhere), while
  ``data.binary_masks`` is unset: binary, ``background`` (0) and ``foreground`` (255 or 1). Read as indices,
  255 would be ``data.ignore_index``: every foreground pixel ignored, a fit of the background alone.
  ``data.binary_masks: false`` keeps that reading.
* Otherwise the classes are numbered ``0..n`` up to the largest index the masks hold (``ignore_index`` aside).

Every mask is read once here; a lossy one (a JPEG) is refused first (:func:`.mask_formats.refuse_lossy`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from .mask_files import PALETTE_FILE, palette_class_names, values_held
from .mask_formats import refuse_lossy

log = logging.getLogger(__name__)

#: The classes of binary masks.
BINARY_CLASSES = ["background", "foreground"]
#: The value sets read as binary masks when ``data.binary_masks`` is unset: ``(values, foreground)``.
BINARY_VALUES = (({0, 255}, 255), ({0, 1}, 1))


def binary_foreground(held: set[int]) -> int | None:
    """The foreground value (255 or 1) of masks holding ``held`` when they are binary masks: only 0 and 255, or only
    0 and 1, the foreground present; ``None`` otherwise."""
    for values, foreground in BINARY_VALUES:
        if foreground in held and held <= values:
            return foreground
    return None


def mask_classes(root: Path, mask_paths: Callable[[], list[Path]], settings: dict) -> tuple[list[str], dict]:
    """The class names of masks under ``root`` without ``classes.txt``, and ``settings`` with ``binary`` decided.

    Args:
        root: ``data.root``.
        mask_paths: Every mask file of the layout (called only when the masks must be read).
        settings: The target settings (``ignore_index``; ``binary``: ``True``, ``False`` or ``None`` for unset).

    Raises:
        BadInputError: a mask is stored in a lossy format (named), or ``palette.json`` is unreadable.
    """
    binary = settings.get("binary")
    if binary:
        return _said(root, BINARY_CLASSES, "data.binary_masks: true"), settings
    names = palette_class_names(root)
    if names:
        return _said(root, names, PALETTE_FILE), {**settings, "binary": False}
    paths = mask_paths()
    refuse_lossy(paths, root)
    held = values_held(paths)
    foreground = binary_foreground(held) if binary is None else None
    if foreground is not None:
        log.info(
            "data: the masks under '%s' hold only 0 and %d: read as binary masks, 0 background and %d foreground"
            " (classes %s); data.binary_masks: false reads them as class indices%s",
            root,
            foreground,
            foreground,
            ", ".join(BINARY_CLASSES),
            " (255: data.ignore_index)" if foreground == 255 else "",
        )
        return list(BINARY_CLASSES), {**settings, "binary": True}
    ignore_index = int(settings.get("ignore_index", 255))
    largest = max((v for v in held if v != ignore_index), default=0)
    names = [str(i) for i in range(max(largest + 1, 2))]
    return _said(root, names, "the largest index the masks hold"), {**settings, "binary": False}


def _said(root: Path, names: list[str], source: str) -> list[str]:
    """``names``, once one line has said where they came from."""
    log.info(
        "data: no classes.txt (or classes.json) in '%s': %d classes from %s, named %s; name them there, one per line"
        " in index order",
        root,
        len(names),
        source,
        ", ".join(names),
    )
    return names
