"""The mask-folder layouts: ``root/images/`` beside ``root/masks/``, or the same inside each split folder.

An image and its mask share their path under ``images/`` and ``masks/`` but for the extension (``images/a/1.jpg``
and ``masks/a/1.png``). An image without a mask, or a mask without an image, is refused naming them. Each image's
target is its mask (:func:`.mask_files.mask_target`: the path, and the facts that show it edited since).
"""

from __future__ import annotations

import os
from pathlib import Path

from litstarter.errors import BadInputError

from .listing import Found, Walker, shown
from .mask_formats import refuse_lossy
from .preprocess import is_image_file
from .splits import SPLIT_NAMES, SourceFile, source_file

#: The two folders of a mask layout (any case).
IMAGES, MASKS = "images", "masks"
#: Files named in full in a pairing error.
NAMED = 5


def is_mask_pair(folder: Path) -> bool:
    """Whether ``folder`` holds an ``images/`` and a ``masks/`` folder and no other (hidden ones aside)."""
    names = {d.name.lower() for d in folder.iterdir() if d.is_dir() and not d.name.startswith(".")}
    return names == {IMAGES, MASKS}


def _pair_dir(folder: Path, name: str) -> Path:
    """``folder/<name>`` as spelled on disk (``Images/``, ``MASKS/``)."""
    return next(d for d in folder.iterdir() if d.is_dir() and d.name.lower() == name)


def _by_stem(top: Path, found: list[Found]) -> dict[str, Found]:
    """``{path under top without extension: file}``; two files of one stem (``1.png``, ``1.jpg``) are refused."""
    out: dict[str, Found] = {}
    for f in found:
        stem = os.path.splitext(os.path.relpath(f.path, top))[0].replace(os.sep, "/")
        if stem in out:
            raise BadInputError(
                f"'{shown(out[stem].path)}' and '{shown(f.path)}' are one image (or mask) under two extensions;"
                " keep one"
            )
        out[stem] = f
    return out


def _unpaired(what: str, files: list[Found], root: Path, other: str) -> BadInputError:
    more = f" and {len(files) - NAMED} more" if len(files) > NAMED else ""
    listed = ", ".join(shown(os.path.relpath(f.path, root)) for f in files[:NAMED]) + more
    return BadInputError(
        f"{len(files)} {what} under '{shown(root)}' have no {other} of the same name: {listed}; every image needs its"
        f" mask ({IMAGES}/<name>.<ext> and {MASKS}/<name>.png), and every mask its image"
    )


def list_pairs(root: Path, folder: Path, walker: Walker) -> list[SourceFile]:
    """Every image under ``folder/images`` with its mask under ``folder/masks``, sorted by path.

    Raises:
        BadInputError: an image without a mask or a mask without an image (the first few named).
    """
    images_dir, masks_dir = _pair_dir(folder, IMAGES), _pair_dir(folder, MASKS)
    images = _by_stem(images_dir, walker.files(images_dir, keep=is_image_file))
    masks = _by_stem(masks_dir, walker.files(masks_dir, keep=is_image_file))
    refuse_lossy([masks[stem].path for stem in sorted(masks)], root)
    lonely = sorted(set(images) - set(masks))
    if lonely:
        raise _unpaired("image(s)", [images[stem] for stem in lonely], root, "mask")
    orphans = sorted(set(masks) - set(images))
    if orphans:
        raise _unpaired("mask(s)", [masks[stem] for stem in orphans], root, "image")
    return [source_file(root, images[stem], mask_target(root, masks[stem])) for stem in sorted(images)]


def list_mask_folders(root: Path, split_dirs: dict[str, str], walker: Walker) -> dict[str | None, list[SourceFile]]:
    """``{None: pairs}`` for ``root/{images,masks}`` (split by the fractions), else ``{split: pairs}``."""
    if not split_dirs:
        return {None: list_pairs(root, root, walker)}
    return {split: list_pairs(root, root / split_dirs[split], walker) for split in SPLIT_NAMES if split in split_dirs}


def mask_target(root: Path, mask: Found) -> list:
    """A listed mask as its image's target: ``[path under root, size, mtime_ns, ctime_ns, inode]`` (the facts that
    show a mask edited since the cache was built).

    Raises:
        BadInputError: the mask is stored in a lossy format (a JPEG: :func:`.mask_formats.refuse_lossy`).
    """
    refuse_lossy([mask.path], root)
    relative = os.path.relpath(mask.path, root).replace(os.sep, "/")
    return [relative, mask.size, mask.mtime_ns, mask.ctime_ns, mask.inode]


def mask_files(root: Path, split_dirs: dict[str, str]) -> list[Path]:
    """Every mask file of the layout (to number the classes when no class names are given)."""
    folders = [root / split_dirs[s] for s in SPLIT_NAMES if s in split_dirs] if split_dirs else [root]
    walker = Walker(root)
    return [f.path for folder in folders for f in walker.files(_pair_dir(folder, MASKS), keep=is_image_file)]
