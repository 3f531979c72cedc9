"""Mask files: their classes and palette, and each mask decoded through its image's geometry (NumPy and Pillow).

* **Indices**: a PNG in mode ``L`` or ``P`` holds a class index per pixel (in ``P`` mode the index itself, whatever
  colour the palette shows it in). ``ignore_index`` (255 by default) marks pixels that no class is learnt or
  scored on; any other index must be below the number of classes.
* **Colours**: an ``RGB``/``RGBA`` mask needs a palette, ``palette.json`` beside the class names (``{"road":
  [128, 64, 128], ...}``, or a list of ``[r, g, b]`` in class order): each colour is a class, any other is refused.
* **Class names**: ``classes.txt`` (one per line, in index order) or ``classes.json`` (a list) in ``data.root``;
  without either, the keys of a ``palette.json`` dict, or (:mod:`.mask_classes`) binary classes for masks of
  0 and 255 (or 0 and 1) only, else classes numbered from the largest index the masks hold; one line says which.
* **Lossless files only**: a JPEG (or lossy WebP, or a JPEG-compressed TIFF) changes pixel values along every edge
  it compresses, so a class index would change: such a mask is refused, named (:mod:`.mask_formats`).
* **Geometry**: a mask gets its image's EXIF orientation, then the cover resize (nearest neighbour: an index is
  never blended) and the centre crop of :func:`.preprocess.resize_center_crop`. It must have its image's size
  (before orientation); ``mask_resize: nearest`` resizes one that has not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from litstarter.errors import BadInputError

from .drawn_masks import drawn_classes, is_drawn
from .listing import shown
from .mask_formats import LOSSY_WHY, lossy_format

#: EXIF orientation -> the transpose that shows the image upright (as ``ImageOps.exif_transpose``).
ORIENTATION = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
CLASS_FILES = ("classes.txt", "classes.json")
PALETTE_FILE = "palette.json"


@dataclass(frozen=True)
class MaskOptions:
    """What decoding a mask needs besides the files.

    Args:
        num_classes: Indices ``0..num_classes - 1`` are classes.
        ignore_index: The index of unlabelled pixels (never a class, never counted).
        palette: ``((r, g, b), index)`` pairs for colour masks; empty: masks hold indices.
        mask_resize: ``refuse`` a mask whose size is not its image's, or resize it (``nearest``).
        binary: Foreground where the mask is not 0 (0/1 and 0/255 PNGs alike): classes 0 and 1, nothing ignored.
    """

    num_classes: int = 2
    ignore_index: int = 255
    palette: tuple[tuple[tuple[int, int, int], int], ...] = field(default_factory=tuple)
    mask_resize: str = "refuse"
    binary: bool = False

    def params(self) -> dict:
        """What the cache's parameters record of these options (they change the stored masks)."""
        return {
            "num_classes": self.num_classes,
            "ignore_index": self.ignore_index,
            "palette": [[list(c), i] for c, i in self.palette],
            "mask_resize": self.mask_resize,
            "binary": self.binary,
        }


def read_class_names(root: Path) -> list[str] | None:
    """The class names of ``root/classes.txt`` (one per line) or ``root/classes.json`` (a list), else ``None``.

    Raises:
        BadInputError: the file is unreadable, empty, or names a class twice.
    """
    for name in CLASS_FILES:
        path = root / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8-sig")
            names = json.loads(text) if name.endswith(".json") else [n.strip() for n in text.splitlines()]
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise BadInputError(f"'{path}' is not readable: {err}") from None
        names = [str(n) for n in names if str(n).strip()] if isinstance(names, list) else None
        if not names:
            raise BadInputError(f"'{path}' names no class; expected one class name per line (JSON: a list)")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise BadInputError(f"'{path}' names {repeated} more than once; name each class once, in index order")
        return names
    return None


def read_palette(root: Path, names: list[str]) -> tuple[tuple[tuple[int, int, int], int], ...]:
    """``root/palette.json`` as ``((r, g, b), index)`` pairs (``()`` without one): ``{class: [r, g, b]}`` or a list of
    ``[r, g, b]`` in class order.

    Raises:
        BadInputError: a colour that is not three 0..255 ints, a class it names that ``names`` lacks, or two classes
            of one colour.
    """
    path, given = root / PALETTE_FILE, _palette_json(root)
    if given is None:
        return ()
    pairs = list(given.items()) if isinstance(given, dict) else list(zip(names, given or [], strict=False))
    out = []
    for name, colour in pairs:
        if name not in names:
            raise BadInputError(f"'{path}' gives a colour to {name!r}, which is none of the classes {names}")
        if not (isinstance(colour, list) and len(colour) == 3 and all(_byte(c) for c in colour)):
            raise BadInputError(f"'{path}': the colour of {name!r} is {colour!r}; expected [r, g, b] of 0..255 ints")
        out.append((tuple(colour), names.index(name)))
    colours = [c for c, _ in out]
    twice = sorted({c for c in colours if colours.count(c) > 1})
    if twice:
        raise BadInputError(f"'{path}' gives colour(s) {[list(c) for c in twice]} to more than one class")
    return tuple(out)


def palette_class_names(root: Path) -> list[str] | None:
    """The class names ``root/palette.json`` gives, for data without ``classes.txt``: a dict's keys in order, a
    list's positions (``0``, ``1``, ...); ``None`` without a palette (or an empty one).

    Raises:
        BadInputError: the file is not readable JSON, or neither a dict nor a list.
    """
    given = _palette_json(root)
    if not given:
        return None
    return [str(name) for name in given] if isinstance(given, dict) else [str(i) for i in range(len(given))]


def _palette_json(root: Path) -> dict | list | None:
    """``root/palette.json`` as read (``None`` without one).

    Raises:
        BadInputError: it is not readable JSON, or neither a dict nor a list.
    """
    path = root / PALETTE_FILE
    if not path.is_file():
        return None
    try:
        given = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise BadInputError(f"'{path}' is not readable JSON: {err}") from None
    if not isinstance(given, (dict, list)):
        raise BadInputError(
            f"'{path}' holds a JSON {type(given).__name__}; expected {{class: [r, g, b], ...}} or a list of [r, g, b]"
        )
    return given


def _byte(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 255


def mask_indices(path: Path, options: MaskOptions) -> np.ndarray:
    """The ``(H, W)`` uint8 class indices of a mask file as stored (no orientation, no resize).

    Raises:
        ValueError: a lossy file (a JPEG, whatever its name), a mode that holds no indices and no palette to map its
            colours, or a colour the palette lacks.
    """
    with Image.open(path) as mask:
        found = "JPEG" if mask.format in ("JPEG", "MPO") else None  # whatever the file's name
        found = lossy_format(path) if mask.format in ("WEBP", "TIFF") else found
        if found:
            raise ValueError(f"a {found}: {LOSSY_WHY}")
        mask.load()
        if options.binary:  # any non-zero value (or colour) is the foreground
            return (np.asarray(mask).reshape(mask.size[1], mask.size[0], -1) != 0).any(axis=-1).astype(np.uint8)
        if mask.mode in ("L", "P"):
            return np.asarray(mask, dtype=np.uint8)
        if mask.mode in ("RGB", "RGBA") and options.palette:
            return _map_colours(np.asarray(mask.convert("RGB")), options)
        if mask.mode in ("RGB", "RGBA"):
            raise ValueError(f"a colour mask ({mask.mode}) needs {PALETTE_FILE} in data.root to map colours to classes")
        raise ValueError(f"a mask is a PNG of class indices (mode L or P) or of palette colours, not mode {mask.mode}")


def _map_colours(rgb: np.ndarray, options: MaskOptions) -> np.ndarray:
    """``(H, W, 3)`` colours -> ``(H, W)`` indices by the palette; a colour it lacks is refused, named."""
    code = (rgb[..., 0].astype(np.int64) << 16) | (rgb[..., 1].astype(np.int64) << 8) | rgb[..., 2]
    out = np.full(code.shape, options.ignore_index, dtype=np.uint8)
    known = np.zeros(code.shape, dtype=bool)
    for (r, g, b), index in options.palette:
        hit = code == ((r << 16) | (g << 8) | b)
        out[hit], known[hit] = index, True
    if not known.all():
        y, x = np.argwhere(~known)[0]
        raise ValueError(f"colour {rgb[y, x].tolist()} at ({x}, {y}) is not in {PALETTE_FILE}")
    return out


def decode_mask(
    root: Path, target, image_size: tuple[int, int], orientation: int, size: tuple[int, int], options: MaskOptions
) -> tuple[np.ndarray | None, str | None]:
    """A mask as the cache stores it beside its image: ``((H, W) uint8, None)``, or ``(None, reason)`` naming it.

    Args:
        root: ``data.root``.
        target: The listed target, ``[mask path under root, size, mtime_ns, ctime_ns, inode]``.
        image_size: The image file's ``(width, height)`` as stored (before its EXIF orientation).
        orientation: The image's EXIF orientation (1: none).
        size: The cached ``(height, width)``.
        options: The classes, the ignore index, the palette, the resize rule.
    """
    path = root / target[0]
    try:
        indices = mask_indices(path, options)
    except Exception as error:  # noqa: BLE001 - any decode failure is this mask's, reported with its file
        return None, f"mask '{shown(target[0])}': {error}"
    height, width = indices.shape
    if (width, height) != tuple(image_size):
        if options.mask_resize != "nearest":
            return None, (
                f"mask '{shown(target[0])}' is {width}x{height} but its image is {image_size[0]}x{image_size[1]}"
                " (data.mask_resize: nearest resizes masks to their image)"
            )
        indices = np.asarray(Image.fromarray(indices).resize(tuple(image_size), Image.Resampling.NEAREST))
    wrong = (indices >= options.num_classes) & (indices != options.ignore_index)
    if wrong.any():
        return None, (
            f"mask '{shown(target[0])}' holds index {int(indices[wrong].max())}, but there are"
            f" {options.num_classes} classes (0-{options.num_classes - 1}; {options.ignore_index} is ignored)"
        )
    mask = Image.fromarray(indices)
    if orientation in ORIENTATION:
        mask = mask.transpose(ORIENTATION[orientation])
    return np.asarray(cover_crop_nearest(mask, size), dtype=np.uint8), None


def cover_crop_nearest(mask: Image.Image, size: tuple[int, int]) -> Image.Image:
    """:func:`.preprocess.resize_center_crop`'s geometry with nearest-neighbour sampling (the same new sides and
    crop box; one pass, since nearest neighbour has no rounding to order)."""
    target_h, target_w = size
    w, h = mask.size
    scale = max(target_h / h, target_w / w)
    new_w, new_h = max(target_w, round(w * scale)), max(target_h, round(h * scale))
    if (new_w, new_h) != (w, h):
        mask = mask.resize((new_w, new_h), Image.Resampling.NEAREST)
    left, top = (new_w - target_w) // 2, (new_h - target_h) // 2
    return mask.crop((left, top, left + target_w, top + target_h))


def classes_present(targets: list, root: Path, options: MaskOptions) -> np.ndarray:
    """``(N, K)`` 0/1: the classes each listed mask holds (an unreadable one holds none: the cache build reports it);
    a drawn mask's are drawn to be counted (a shape that later ones cover holds no pixel)."""
    out = np.zeros((len(targets), options.num_classes), dtype=np.float32)
    for row, target in zip(out, targets, strict=True):
        if is_drawn(target):
            row[drawn_classes(target, options.num_classes)] = 1
            continue
        try:
            values = np.unique(mask_indices(root / target[0], options))
        except Exception:  # noqa: BLE001 - reported, with its reason, when the cache decodes it
            continue
        row[values[values < options.num_classes]] = 1
    return out


def values_held(paths: list[Path]) -> set[int]:
    """Every index the index masks at ``paths`` hold, together (to name the classes of data without
    ``classes.txt``). Unreadable masks, and colour ones, are skipped: the cache build names them."""
    held: set[int] = set()
    for path in paths:
        try:
            held.update(np.unique(mask_indices(path, MaskOptions())).tolist())
        except Exception:  # noqa: BLE001 - reported when the cache decodes it
            continue
    return held
