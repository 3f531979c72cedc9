"""A class per pixel (``mask``): a mask file beside each image, or shapes an annotation draws (LabelMe, CVAT, COCO
polygons or RLE: :mod:`..images.drawn_masks`), decoded with it into ``<split>.targets.u8``.

A mask is a PNG of class indices (mode ``L`` or ``P``: the index itself, not the palette's colour) or a colour PNG
whose colours a palette maps to classes (:mod:`..images.mask_files`). It is decoded with its image, through the
same geometry: the image's EXIF orientation, the cover resize (nearest neighbour: an index is never blended) and
the centre crop; it must have the image's size (or ``data.mask_resize: nearest`` makes it so). ``ignore_index``
(255 by default) marks pixels no class is learnt or scored on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from litstarter.errors import UsageError

from ..images.drawn_masks import decode_drawn, is_drawn, valid_drawn
from ..images.label_sets import carve_sets
from ..images.mask_files import MaskOptions, classes_present, cover_crop_nearest, decode_mask, read_palette
from ..images.splits import SourceFile
from .base import TargetKind


class MaskTargets(TargetKind):
    """A mask per image, stored ``(N, H, W)`` uint8 beside the images; splits stratified on the classes each image
    holds (iterative stratification, as label sets).

    Args:
        root: The data root the masks' paths are under (``None`` until :meth:`configured`).
        options: The classes, the ignore index, the palette and the resize rule.
        on_bad_box: Drawn masks' bad shapes (:mod:`..images.polygon_files`): ``error`` or ``skip``.
    """

    name = "mask"
    how = "stratified by the classes each mask holds (iterative stratification)"
    storage = "pixels"
    holder = "pixel"
    empty_hint = "; check classes.txt, data.ignore_index and data.binary_masks"

    def __init__(self, root: Path | None = None, options: MaskOptions | None = None, on_bad_box: str = "error") -> None:
        self.root = root
        self.options = options or MaskOptions()
        self.on_bad_box = on_bad_box

    def configured(self, root, names: list[str], settings: dict) -> MaskTargets:
        """For ``root``: ``settings`` ``ignore_index``, ``mask_resize``, ``binary``, ``on_bad_box`` (drawn masks'
        bad shapes); the palette from ``root/palette.json``.

        Raises:
            UsageError: ``ignore_index`` is a class's index (its pixels would be neither learnt nor scored).
        """
        ignore_index = int(settings.get("ignore_index", 255))
        if 0 <= ignore_index < len(names):
            raise UsageError(
                f"data.ignore_index is {ignore_index}, the index of class {names[ignore_index]!r} (the classes are"
                f" 0-{len(names) - 1}: {', '.join(names)}): its pixels would be neither learnt nor scored; give"
                f" data.ignore_index an index no class has ({len(names)}-255; 255 by default)"
            )
        options = MaskOptions(
            num_classes=len(names),
            ignore_index=ignore_index,
            palette=read_palette(Path(root), names),
            mask_resize=str(settings.get("mask_resize", "refuse")),
            binary=bool(settings.get("binary")),
        )
        return MaskTargets(Path(root), options, str(settings.get("on_bad_box", "error")))

    def params(self) -> dict:
        """The options that change the stored masks."""
        return self.options.params()

    def carve(
        self,
        files: list[SourceFile],
        names: list[str],
        val_fraction: float,
        test_fraction: float,
        seed: int,
        where: str,
    ) -> dict[str, list[SourceFile]]:
        """Iterative stratification of which classes each mask holds (each mask's file read once, here)."""
        files = sorted(files, key=lambda f: f.path.encode("utf-8", "surrogateescape"))
        held = classes_present([f.target for f in files], self.root, self.options)
        parts = carve_sets(files, held, val_fraction, test_fraction, seed, where)
        return {split: self.order(part) for split, part in parts.items()}

    def decode(self, target, image_size: tuple[int, int], orientation: int, size: tuple[int, int]):
        """The mask of ``target`` as the cache stores it: ``((H, W) uint8, None)`` or ``(None, reason)``."""
        if is_drawn(target):
            ignore = self.options.ignore_index
            return decode_drawn(target, image_size, orientation, size, ignore, cover_crop_nearest)
        return decode_mask(self.root, target, image_size, orientation, size, self.options)

    def strata(self, stored: np.ndarray) -> np.ndarray:
        """Which classes each mask holds, ``(N, K)`` over the configured classes (ignored pixels aside)."""
        k = self.options.num_classes
        out = np.zeros((len(stored), k), dtype=np.int64)
        for row, mask in zip(out, stored, strict=True):
            values = np.unique(np.asarray(mask))
            row[values[values < k]] = 1
        return out

    def text(self, row, names: Sequence[str]) -> str:
        """Masks are files: no CSV cell holds one.

        Raises:
            UsageError: always (what writes a labels CSV, cv's split files, does not take masks yet).
        """
        raise UsageError("this command writes each image's target into a labels CSV; masks are files: not yet")

    def column(self, names: Sequence[str]) -> list[str]:
        """``mask``."""
        return ["mask"]

    def valid(self, target, k: int) -> bool:
        """``[mask path, size, mtime_ns, ctime_ns, inode]``, or a drawn mask's shapes (:mod:`..images.drawn_masks`)."""
        if is_drawn(target):
            return valid_drawn(target, k)
        return (
            isinstance(target, list)
            and len(target) == 5
            and isinstance(target[0], str)
            and all(isinstance(v, int) and not isinstance(v, bool) for v in target[1:])
        )

    def empty(self, stored: np.ndarray, names: Sequence[str]) -> list[str]:
        """The classes no pixel of ``stored`` (the train split's masks) is: read a block of masks at a time, until
        every class has been seen."""
        k, seen = len(names), np.zeros(len(names), dtype=bool)
        for start in range(0, len(stored), 256):
            block = np.asarray(stored[start : start + 256]).ravel()
            seen |= np.bincount(block[block < k], minlength=k)[:k] > 0
            if seen.all():
                return []
        return [name for name, held in zip(names, seen, strict=True) if not held]

    def class_counts(self, stored: np.ndarray, k: int) -> np.ndarray:
        """Pixels of each class (ignored pixels aside): the inverse-frequency weights of a per-pixel loss."""
        counts = np.zeros(k, dtype=np.int64)
        for start in range(0, len(stored), 256):  # a block of masks at a time, out of the memory map
            block = np.asarray(stored[start : start + 256]).ravel()
            counts += np.bincount(block[block < k], minlength=k)[:k]
        return counts

    def summary(self, by_split: dict[str, np.ndarray], names: Sequence[str]) -> dict:
        """``{"pixels": {split: {class: fraction of the split's scored pixels}}, "images_with": {split: {class:
        images holding it}}, "ignored": {split: fraction of pixels ignored}}``."""
        pixels, images, ignored = {}, {}, {}
        k = len(names)
        for split, stored in by_split.items():
            counts = self.class_counts(stored, k)
            total = max(int(np.prod(np.shape(stored))), 1)
            scored = max(int(counts.sum()), 1)
            pixels[split] = {n: round(int(c) / scored, 6) for n, c in zip(names, counts, strict=True)}
            images[split] = dict(zip(names, self.strata(stored).sum(axis=0).tolist(), strict=True))
            ignored[split] = round(1 - int(counts.sum()) / total, 6)
        return {"pixels": pixels, "images_with": images, "ignored": ignored}

    def summary_lines(self, summary: dict) -> list[str]:
        """The pixel share of each class, per split."""
        lines = []
        for split, shares in summary["pixels"].items():
            listed = ", ".join(f"{n} {100 * s:.1f}%" for n, s in shares.items())
            lines.append(f"pixels ({split}): {listed}; ignored {100 * summary['ignored'][split]:.1f}%")
        return lines


KIND = MaskTargets()
