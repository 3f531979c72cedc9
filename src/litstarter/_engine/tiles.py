"""Sliding windows: an image larger than the network's input predicted window by window, in one place for the task's
val/test/predict (:mod:`litstarter.models.tiling` hands it torch's arrays), ``infer`` and ``serve`` (NumPy).

Torch-free on purpose: ``infer`` and ``serve`` on an ONNX model tile with NumPy alone. The array operations that
differ between NumPy and torch go through :class:`ArrayOps`; everything else (where the windows go, how much each
counts, how boxes merge) is written once, here. ``model.json``'s ``tiling`` states the same rules in words
(:meth:`Tiling.contract`), so a client in any language reproduces them.

* **Windows.** Per axis of length ``L`` and window side ``s``: starts ``0, s - overlap, 2 (s - overlap), ...`` below
  ``L - s``, then ``L - s`` (the last window flush with the end). A side shorter than ``s`` is padded at its end
  with 0 to ``s`` (one window) and the outputs are cut back.
* **Blend** (a map of logits, segmentation): the logits of a pixel are the weighted mean over the windows holding it,
  each window weighted per pixel by ``wy * wx``; along an axis the weight is 1, except near an *inner* edge (one
  that is not the image's border), where it is 0 for the first ``q = overlap // 4`` pixels and then rises linearly
  to 1 over ``r = max(1, overlap // 2)`` pixels. Why: a window's outputs near its inner edges see zero padding where
  the whole image has pixels, so they are wrong within the network's receptive field; a weight of exactly 0 there
  leaves them out, and the ramp after it hides the seam of a network whose field is wider. Every pixel keeps a
  positive weight (in an overlap of width ``o >= overlap`` one of the two windows is at least ``(o - 1) / 2 >= q``
  pixels from its inner edge), so for a network whose receptive field is under half the overlap (reaching at most
  ``q`` pixels either side) the blend equals the whole image's logits. A uniform average would mix the wrong edge
  logits in; a taper without the zero band would too.
* **Merge** (boxes, detection): each window's boxes are shifted by its offset into the image's pixels. A box within
  :data:`EDGE_MARGIN` px of an inner edge of its window is *cut* (the object may go on past the edge). Then, class by
  class, greedily: whole boxes before cut ones, higher scores first; a box is dropped when a kept box of its class
  overlaps it with IoU >= ``nms_iou`` (the model's own non-maximum suppression), or, when the two come from different
  windows and either is cut, when their intersection covers at least :data:`SEAM_COVER` of the smaller box. An
  object straddling a seam is thus found once: whole in the window that holds it (the overlap at least its size),
  its cut part in the next window dropped. Class-wise NMS, not weighted box fusion: the kept box is one a window
  predicted, never an average of several.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import UsageError

#: The longest side images are kept at by default: a longer one is resized down to it (aspect kept).
MAX_SIDE = 4096
#: A box this close (in pixels) to an inner edge of its window is cut by it.
EDGE_MARGIN = 2.0
#: Two boxes of a class from different windows, either of them cut, are one object when their intersection covers
#: this share of the smaller one.
SEAM_COVER = 0.5
#: What each answer's rule does with the windows' outputs (``TaskAnswers.tile_rule``).
RULES = ("blend", "boxes")


@dataclass(frozen=True)
class Tiling:
    """Windows of ``size`` that overlap by ``overlap`` pixels, over images kept at their own size up to ``max_side``.

    Args:
        size: ``(height, width)`` of a window: the network's input.
        overlap: Pixels two neighbouring windows share along an axis (at most half the window's shorter side).
        max_side: Images whose longer side is over this are resized down to it (aspect kept).
    """

    size: tuple[int, int]
    overlap: int
    max_side: int = MAX_SIDE

    @classmethod
    def from_value(cls, value, where: str = "data.tiles") -> Tiling | None:
        """A tiling from ``None``, a side (``256``), ``[h, w]``, a mapping (``{size, overlap, max_side}``) or an object
        with those attributes (the data module's ``Tiles``); ``overlap`` unset is a quarter of the shorter side.

        Raises:
            UsageError: one line naming ``where`` and the value out of range.
        """
        if value is None or isinstance(value, Tiling):
            return value
        if isinstance(value, int | list | tuple):
            value = {"size": value}
        if not isinstance(value, Mapping):
            value = {k: getattr(value, k) for k in ("size", "overlap", "max_side") if hasattr(value, k)}
        size = value.get("size")
        if isinstance(size, int) and not isinstance(size, bool):
            size = (size, size)
        if not (isinstance(size, list | tuple) and len(size) == 2 and all(isinstance(s, int) for s in size)):
            raise UsageError(f"{where}.size must be a side in pixels or [height, width], got {size!r}")
        if min(size) < 16:
            raise UsageError(f"{where}.size must be at least 16 px a side, got {list(size)}")
        overlap = value.get("overlap")
        overlap = min(size) // 4 if overlap is None else overlap
        if not isinstance(overlap, int) or not 0 <= overlap <= min(size) // 2:
            raise UsageError(
                f"{where}.overlap must be 0 to half the window's shorter side ({min(size) // 2} px), got {overlap!r}"
            )
        max_side = value.get("max_side")
        max_side = MAX_SIDE if max_side is None else max_side
        if not isinstance(max_side, int) or max_side < max(size):
            raise UsageError(f"{where}.max_side must be at least the window's side ({max(size)} px), got {max_side!r}")
        return cls((int(size[0]), int(size[1])), int(overlap), int(max_side))

    def to_dict(self) -> dict:
        """Plain values (checkpoints' hyper-parameters): ``{"size": [h, w], "overlap", "max_side"}``."""
        return {"size": list(self.size), "overlap": self.overlap, "max_side": self.max_side}

    def contract(self, rule: str, nms_iou: float | None = None) -> dict:
        """``model.json``'s ``tiling``: the numbers and, in words, the windows and ``rule`` (``blend``, ``boxes``)."""
        q, r = self.overlap // 4, max(1, self.overlap // 2)
        out = {
            **self.to_dict(),
            "rule": rule,
            "own_size": "each image at its own size: s = min(1, max_side / max(H, W)) in float64; resized to"
            " [round(H * s), round(W * s)] (half to even) by preprocessing.resize's rules when s < 1",
            "windows": "per axis of length L and window side n (stride n - overlap): starts 0, stride, 2 stride, ..."
            " below L - n, then L - n; a side shorter than n is padded at its end with 0 to n (one window), the outputs"
            " cut back to L",
        }
        if rule == "blend":
            out["blend"] = (
                f"logits = sum over windows of weight * logits / sum of weight; weight = wy * wx, per axis 1 except"
                f" near an inner edge (not the image's border): 0 for the first q = overlap // 4 = {q} pixels from it,"
                f" then (e - q + 1) / r up to 1 (e: pixels from the edge, r = max(1, overlap // 2) = {r})"
            )
        else:
            out["merge"] = (
                f"boxes shifted by their window's (left, top); a box within {EDGE_MARGIN:g} px of an inner edge of"
                f" its window is cut; per class, greedily, whole boxes first, then by score: a box is dropped when a"
                f" kept one has IoU >= nms_iou ({nms_iou}), or comes from another window with either cut and their"
                f" intersection covers >= {SEAM_COVER:g} of the smaller box; the kept boxes by score, clipped to the"
                " image"
            )
        return out


def own_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """``(height, width)`` an image of ``width x height`` is kept at: its own, or resized down so its longer side is
    ``max_side`` (``round`` halves to even, as the resize rules say)."""
    scale = min(1.0, max_side / max(width, height))
    return (max(1, round(height * scale)), max(1, round(width * scale))) if scale < 1 else (height, width)


def starts(length: int, side: int, overlap: int) -> list[int]:
    """Where the windows of ``side`` start along an axis of ``length`` (the module's rule)."""
    if length <= side:
        return [0]
    return [*range(0, length - side, side - overlap), length - side]


def positions(height: int, width: int, tiling: Tiling) -> list[tuple[int, int]]:
    """Every window's ``(top, left)`` over an image of ``height x width`` (at least the window's size), row by row."""
    (th, tw), o = tiling.size, tiling.overlap
    return [(top, left) for top in starts(height, th, o) for left in starts(width, tw, o)]


def axis_weights(start: int, side: int, length: int, overlap: int) -> np.ndarray:
    """A window's ``(side,)`` weights along an axis of ``length`` (the blend's taper at its inner edges)."""
    q, r = overlap // 4, max(1, overlap // 2)
    e = np.arange(side, dtype=np.float64)
    weights = np.ones(side)
    if start > 0:
        weights = np.minimum(weights, np.clip((e - q + 1) / r, 0, 1))
    if start + side < length:
        weights = np.minimum(weights, np.clip((side - e - q) / r, 0, 1))
    return weights


class ArrayOps:
    """The few array operations NumPy and torch spell differently (the blend's, on ``like``'s kind of array)."""

    def zeros(self, like, shape: tuple[int, ...]):
        """float32 zeros of ``shape``, where ``like`` lives."""
        return np.zeros(shape, dtype=np.float32)

    def constant(self, like, array: np.ndarray):
        """``array`` (NumPy, float32) where ``like`` lives."""
        return array.astype(np.float32)

    def floating(self, array):
        """As float32."""
        return np.asarray(array, dtype=np.float32)

    def stack(self, arrays: list):
        """Stacked along a new first axis."""
        return np.stack(arrays)

    def pad(self, image, height: int, width: int):
        """``(C, h, w)`` padded at its end with 0 to ``(C, height, width)``."""
        c, h, w = image.shape
        return np.pad(image, ((0, 0), (0, height - h), (0, width - w)))

    def numpy(self, array) -> np.ndarray:
        """As a NumPy array."""
        return np.asarray(array)


NUMPY = ArrayOps()


class Blend:
    """The weighted mean of the windows' logits over an image (the module's blend).

    Args:
        height: The (padded) image's height.
        width: Its width.
        tiling: The windows.
        ops: The arrays' operations.
    """

    def __init__(self, height: int, width: int, tiling: Tiling, ops: ArrayOps = NUMPY) -> None:
        self.height, self.width, self.tiling, self.ops = height, width, tiling, ops
        self.total = self.norm = None

    def add(self, outputs, where: Sequence[tuple[int, int]]) -> None:
        """Windows' ``(n, K, h, w)`` logits, at their ``(top, left)``."""
        (th, tw), o = self.tiling.size, self.tiling.overlap
        if self.total is None:
            self.total = self.ops.zeros(outputs, (outputs.shape[1], self.height, self.width))
            self.norm = self.ops.zeros(outputs, (self.height, self.width))
        for logits, (top, left) in zip(outputs, where, strict=True):
            weight = np.outer(axis_weights(top, th, self.height, o), axis_weights(left, tw, self.width, o))
            weight = self.ops.constant(outputs, weight)
            self.total[:, top : top + th, left : left + tw] += self.ops.floating(logits) * weight
            self.norm[top : top + th, left : left + tw] += weight

    def result(self):
        """``(K, height, width)`` blended logits."""
        return self.total / self.norm


class BoxMerge:
    """The boxes of the windows over an image, merged across the seams (the module's merge).

    Args:
        height: The image's height (before any padding).
        width: Its width.
        tiling: The windows.
        nms_iou: The model's non-maximum suppression IoU.
    """

    def __init__(self, height: int, width: int, tiling: Tiling, nms_iou: float) -> None:
        self.height, self.width, self.tiling, self.nms_iou = height, width, tiling, nms_iou
        self.rows: list[np.ndarray] = []  # x1, y1, x2, y2, score, class, window, cut

    def add(self, outputs: np.ndarray, where: Sequence[tuple[int, int]]) -> None:
        """Windows' ``(n, D, 6)`` detections (``x1, y1, x2, y2, score, class``; class -1 pads), at their
        ``(top, left)``."""
        (th, tw) = self.tiling.size
        padded_h, padded_w = max(self.height, th), max(self.width, tw)  # a window's end there is the image's border
        for found, (top, left) in zip(np.asarray(outputs, dtype=np.float64), where, strict=True):
            found = found[found[:, 5] >= 0]
            box = found[:, :4] + [left, top, left, top]
            cut = np.zeros(len(found), dtype=bool)
            if left > 0:
                cut |= box[:, 0] <= left + EDGE_MARGIN
            if top > 0:
                cut |= box[:, 1] <= top + EDGE_MARGIN
            if left + tw < padded_w:
                cut |= box[:, 2] >= left + tw - EDGE_MARGIN
            if top + th < padded_h:
                cut |= box[:, 3] >= top + th - EDGE_MARGIN
            window = np.full(len(found), len(self.rows), dtype=np.float64)
            self.rows.append(np.column_stack([box, found[:, 4:6], window, cut]))

    def result(self) -> np.ndarray:
        """``(m, 6)`` float32 rows ``x1, y1, x2, y2, score, class`` in the image's pixels, best first."""
        rows = np.concatenate(self.rows) if self.rows else np.zeros((0, 8))
        rows[:, [0, 2]] = rows[:, [0, 2]].clip(0, self.width)
        rows[:, [1, 3]] = rows[:, [1, 3]].clip(0, self.height)
        rows = rows[(rows[:, 2] > rows[:, 0]) & (rows[:, 3] > rows[:, 1])]
        kept = [i for label in np.unique(rows[:, 5]) for i in self._kept(rows, np.flatnonzero(rows[:, 5] == label))]
        out = rows[kept][:, :6]
        return out[np.argsort(-out[:, 4], kind="stable")].astype(np.float32)

    def _kept(self, rows: np.ndarray, members: np.ndarray) -> list[int]:
        """The rows of one class that survive, greedily: whole before cut, then by score."""
        order = members[np.lexsort((-rows[members, 4], rows[members, 7]))]
        kept: list[int] = []
        for i in order:
            if not kept:
                kept.append(int(i))
                continue
            others = rows[kept]
            inter = _intersection(rows[i, :4], others[:, :4])
            area, areas = _area(rows[i, :4]), _area(others[:, :4].T)
            iou = inter / np.maximum(area + areas - inter, 1e-12)
            seam = (others[:, 6] != rows[i, 6]) & ((others[:, 7] > 0) | (rows[i, 7] > 0))
            cover = inter / np.maximum(np.minimum(area, areas), 1e-12)
            if not ((iou >= self.nms_iou) | (seam & (cover >= SEAM_COVER))).any():
                kept.append(int(i))
        return kept


def _area(box: np.ndarray) -> np.ndarray:
    return (box[2] - box[0]) * (box[3] - box[1])


def _intersection(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    width = np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0])
    height = np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1])
    return width.clip(0) * height.clip(0)


def padded(image, tiling: Tiling, ops: ArrayOps = NUMPY):
    """``(C, H, W)`` padded at its end with 0 to at least the window's size."""
    (th, tw), (h, w) = tiling.size, image.shape[-2:]
    return image if h >= th and w >= tw else ops.pad(image, max(h, th), max(w, tw))


def windows(image, where: Sequence[tuple[int, int]], tiling: Tiling, ops: ArrayOps = NUMPY):
    """The ``(n, C, h, w)`` windows of a (padded) ``(C, H, W)`` image at ``where``."""
    th, tw = tiling.size
    return ops.stack([image[:, top : top + th, left : left + tw] for top, left in where])


def chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    """``items`` in runs of ``size``."""
    for start in range(0, len(items), max(1, size)):
        yield items[start : start + size]


def assembler(height: int, width: int, tiling: Tiling, rule: str, nms_iou: float = 0.5, ops: ArrayOps = NUMPY):
    """What gathers the windows' outputs of an image of ``height x width``: :class:`Blend` or :class:`BoxMerge`."""
    if rule == "blend":
        return Blend(max(height, tiling.size[0]), max(width, tiling.size[1]), tiling, ops)
    if rule == "boxes":
        return BoxMerge(height, width, tiling, nms_iou)
    raise ValueError(f"no tiling rule {rule!r}: one of {RULES}")


def finished(gathered, height: int, width: int, rule: str):
    """The assembler's result, cut back to ``height x width`` (logits) or as it is (boxes)."""
    out = gathered.result()
    return out[:, :height, :width] if rule == "blend" else out


def predict(
    image,
    tiling: Tiling,
    rule: str,
    run: Callable,
    batch: int = 16,
    nms_iou: float = 0.5,
    ops: ArrayOps = NUMPY,
):
    """One ``(C, H, W)`` uint8 image through ``run`` window by window: ``(K, H, W)`` blended logits (``rule``
    ``blend``) or ``(m, 6)`` merged boxes (``boxes``).

    Args:
        image: The image, at its own size (NumPy, or what ``ops`` handles).
        tiling: The windows.
        rule: ``blend`` or ``boxes`` (the task's answers say which).
        run: ``(n, C, h, w)`` windows -> their outputs (``(n, K, h, w)`` logits, ``(n, D, 6)`` detections).
        batch: Windows per call of ``run``.
        nms_iou: The model's non-maximum suppression IoU (boxes).
        ops: The arrays' operations (torch's for the task).
    """
    height, width = image.shape[-2:]
    image = padded(image, tiling, ops)
    where = positions(image.shape[-2], image.shape[-1], tiling)
    gathered = assembler(height, width, tiling, rule, nms_iou, ops)
    for part in chunks(where, batch):
        outputs = run(windows(image, part, tiling, ops))
        gathered.add(outputs if rule == "blend" else ops.numpy(outputs), part)
    return finished(gathered, height, width, rule)
