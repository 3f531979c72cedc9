"""``litstarter convert``'s output folder, written whole or not at all: ``--out`` must not exist or be empty; the
files go into a hidden sibling folder, renamed into place once every file is written (a failure removes it, leaving
``--out`` as it was). Images are copied, never moved or linked: the source stays as it was."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from litstarter.errors import BadInputError, UsageError

from ..images.box_files import shown_size
from ..images.listing import shown
from .source import Item

T = TypeVar("T")


def check_out(out: Path, root: Path) -> None:
    """Refuse, in one line and before anything is read, an ``--out`` that holds something, is a file, lies in a
    folder that does not exist, or is ``data.root`` or a folder above it.

    Raises:
        UsageError: any of these.
    """
    if out.is_file() or (out.exists() and not out.is_dir()):
        raise UsageError(f"--out '{shown(out)}' is a file; name a new (or empty) folder to write into")
    if out.is_dir() and any(out.iterdir()):
        raise UsageError(f"--out '{shown(out)}' is not empty; name a new (or empty) folder, nothing is overwritten")
    parent = out.resolve().parent
    if not parent.is_dir():
        raise UsageError(f"--out '{shown(out)}': the folder '{shown(parent)}' does not exist; create it first")
    if root.exists() and out.resolve() in (root.resolve(), *root.resolve().parents):
        raise UsageError(f"--out '{shown(out)}' is data.root or a folder above it; name a folder of its own")


def into_place(out: Path, write: Callable[[Path], T]) -> T:
    """``write(folder)`` into a hidden sibling of ``out``, then that folder renamed to ``out`` (an empty ``out``
    replaced); on any failure the sibling is removed and ``out`` left as it was. Returns what ``write`` returns."""
    parent = out.resolve().parent
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.converting-", dir=parent))
    try:
        result = write(staging)
        os.chmod(staging, 0o777 & ~_umask())  # mkdtemp's 0700 would keep the folder from others
        os.replace(staging, out.resolve())
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return result


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def copy_image(item: Item, folder: Path) -> Path:
    """``item``'s image copied into ``folder`` under its own name (its times kept); the copy's path."""
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(item.image, folder / item.image.name))


def shown_dims(item: Item) -> tuple[int, int]:
    """``item``'s image's ``(width, height)`` as shown (after its EXIF orientation).

    Raises:
        BadInputError: the image cannot be read.
    """
    size = shown_size(item.image)
    if size is None:
        raise BadInputError(f"image '{item.name}' cannot be read as an image (its size is needed to write its boxes)")
    return size
