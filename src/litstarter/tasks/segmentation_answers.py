"""Semantic segmentation's answers: the argmax class map, mapped back onto each file's own pixels (NumPy, Pillow).

The graph's ``(B, K, h, w)`` logits cover the eval view: the file resized to cover ``resize_size`` (aspect kept),
centre-cropped to it, then centre-cropped to ``image_size``. A file pixel ``(x, y)`` of a ``W x H`` file (after its
EXIF orientation) looks up the class of view pixel ``(floor((x + 0.5) * new_w / W) - left, floor((y + 0.5) * new_h /
H) - top)``, where ``new_w, new_h`` are the covering sides and ``left, top`` both crops' offsets together; pixels
the crops cut off (the long side of an image of another aspect) get ``outside`` (255, the ignore index). A model
trained on tiles (``model.json``'s ``tiling``) gives its logits for the file at its own size: resize and crop are then
that size and the rule maps each pixel onto itself (or, past ``tiling.max_side``, scales it back).
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

from litstarter.tasks.answers import TaskAnswers, source_size, view_geometry

#: The class given to file pixels the eval view's crops cut off.
OUTSIDE = 255


class SegmentationAnswers(TaskAnswers):
    """A class per pixel: ``outputs`` are ``(B, h, w)`` uint8 class maps; ``infer`` writes each file's mask as a PNG
    at the file's own size and the share of each class; ``serve`` answers that PNG, or COCO-style run-length
    encodings per class as JSON."""

    name = "segmentation"
    output_kind = "logits (N, K, H, W); the class of a pixel is the argmax over K"
    output_name = "class_map"
    output_dtype = "UINT8"
    ranks_classes = False
    state_keys = ("ignore_index",)
    agreement_name = "pixel_agreement"
    agreement_required = 0.999
    score_name = "miou"
    metric_name = "miou"
    output_prefix = "fraction_"
    on_source = True
    writes_files = "mask"
    tile_rule = "blend"

    def problem(self) -> str | None:
        """The names, and one ignore index."""
        if len(self.class_names) < self.min_outputs:
            return f"class_names needs at least {self.min_outputs} names for task {self.name}, got {self.class_names}"
        return None

    @classmethod
    def state_of(cls, data) -> dict:
        """``ignore_index``, an int (255 where ``model.json`` has none)."""
        return {"ignore_index": int(data.get("ignore_index", OUTSIDE))}

    def logits_shape(self, image_size: Sequence[int]) -> list:
        """``[K, h, w]``."""
        return [len(self.class_names), *image_size]

    def output_shape(self, image_size: Sequence[int]) -> list:
        """``[h, w]``."""
        return list(image_size)

    def outputs(self, logits: np.ndarray) -> np.ndarray:
        """The class maps, ``(B, h, w)`` uint8 (the first class among equal logits)."""
        return logits.argmax(axis=1).astype(np.uint8)

    def answer(self, p: np.ndarray, k: int) -> tuple[list[tuple[str, float]], None]:
        """Every class's share of the map's pixels, in class order (``k`` is not used)."""
        shares = np.bincount(p.ravel(), minlength=len(self.class_names))[: len(self.class_names)] / p.size
        return [(n, float(s)) for n, s in zip(self.class_names, shares, strict=True)], None

    def json_answer(self, p: np.ndarray, k: int) -> dict:
        """The map's class shares (at the model's input size)."""
        return {"fractions": dict(self.answer(p, k)[0])}

    def csv_columns(self, k: int) -> list[str]:
        """``fraction_<class>`` for every class (shares of the file's mask)."""
        return [f"{self.output_prefix}{n}" for n in self.class_names]

    def csv_cells(self, p: np.ndarray, k: int) -> list[str]:
        """Every class's share."""
        return [f"{share:.6f}" for _, share in self.answer(p, k)[0]]

    def predicted(self, p: np.ndarray) -> str:
        """The classes the map holds, ``;``-joined."""
        return ";".join(self.class_names[i] for i in np.unique(p) if i < len(self.class_names))

    def agreement(self, outputs: np.ndarray, reference: np.ndarray) -> float:
        """The share of pixels whose class is the same (an export must agree on 99.9%)."""
        return float((outputs.argmax(axis=1) == reference.argmax(axis=1)).mean())

    def scored(self, outputs: np.ndarray, targets: np.ndarray) -> float:
        """Mean IoU over the classes present in the targets or the predictions (ignored pixels aside)."""
        truth = np.asarray(targets)[: len(outputs)].astype(np.int64)
        keep = truth != int(self.state.get("ignore_index", OUTSIDE))
        k = len(self.class_names)
        pairs = np.bincount(truth[keep] * k + outputs[keep].astype(np.int64), minlength=k * k).reshape(k, k)
        union = pairs.sum(0) + pairs.sum(1) - np.diag(pairs)
        present = union > 0
        return float((np.diag(pairs)[present] / union[present]).mean()) if present.any() else 0.0

    def source_answer(self, p: np.ndarray, source, view: dict) -> np.ndarray:
        """The class map on the source file's own pixels, ``(H, W)`` uint8 (:func:`map_back`). ``source``: the file's
        path or bytes; ``view``: ``resize_size`` and ``image_size``."""
        return map_back(p, source_size(source), view["resize_size"], view["image_size"])

    def http_answer(self, answer: np.ndarray, k: int, accept: str) -> tuple[object, str]:
        """The mask as the PNG ``infer`` writes when ``Accept`` names ``image/png``, else its run-length JSON."""
        if "image/png" in accept.lower():
            return self.file_bytes(answer), "image/png"
        return self.rle_answer(answer), "application/json"

    def file_bytes(self, mask: np.ndarray) -> bytes:
        """A mask as the PNG ``infer`` writes and ``serve`` sends (mode ``L``: the indices)."""
        from PIL import Image

        buffer = io.BytesIO()
        Image.fromarray(mask, mode="L").save(buffer, format="PNG")
        return buffer.getvalue()

    def rle_answer(self, mask: np.ndarray) -> dict:
        """``{"size": [H, W], "segments": [{"class", "index", "fraction", "rle": {"size", "counts"}}]}``: COCO's
        uncompressed run-length encoding (column-major, from a run of 0s) of each class the mask holds."""
        segments = []
        for index in np.unique(mask):
            if index >= len(self.class_names):
                continue
            binary = (mask == index).ravel(order="F")
            changes = np.flatnonzero(np.diff(binary.astype(np.int8))) + 1
            bounds = np.concatenate([[0], changes, [binary.size]])
            counts = np.diff(bounds).tolist()
            counts = [0, *counts] if binary[0] else counts
            name = self.class_names[int(index)]
            rle = {"size": list(mask.shape), "counts": counts}
            segments.append({"class": name, "index": int(index), "fraction": float(binary.mean()), "rle": rle})
        return {"size": list(mask.shape), "segments": segments}


def map_back(
    class_map: np.ndarray, size: tuple[int, int], resize_size: Sequence[int], image_size: Sequence[int]
) -> np.ndarray:
    """The ``(h, w)`` class map of a file's eval view on the file's ``(W, H)`` pixels (the module's rule)."""
    width, height = size
    h, w = image_size
    scale_x, scale_y, left, top = view_geometry(size, resize_size, image_size)
    xs = np.floor((np.arange(width) + 0.5) * scale_x).astype(np.int64) - left
    ys = np.floor((np.arange(height) + 0.5) * scale_y).astype(np.int64) - top
    inside = (ys[:, None] >= 0) & (ys[:, None] < h) & (xs[None, :] >= 0) & (xs[None, :] < w)
    mapped = class_map[np.clip(ys, 0, h - 1)[:, None], np.clip(xs, 0, w - 1)[None, :]]
    return np.where(inside, mapped, OUTSIDE).astype(np.uint8)


ANSWERS = SegmentationAnswers
