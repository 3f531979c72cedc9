"""Object detection's answers: scored boxes, mapped back onto each file's own pixels (NumPy only).

The graph's output is ``(N, D, 6)``: per image ``D`` rows ``x1, y1, x2, y2, score, class`` in the model input's
pixels (its eval view), best first, padded with rows of class -1. A box's corner ``x`` in the view is ``x_file =
(x + left) / scale_x`` in the file (and so ``y``), with :func:`~.answers.view_geometry`'s figures (the cover resize
and both centre crops); a box is clipped to the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from litstarter.tasks.answers import TaskAnswers, source_size, view_geometry

#: An exported box matches eager's at this IoU or more (same class), its score within SCORE_TOLERANCE.
MATCH_IOU, SCORE_TOLERANCE = 0.99, 1e-3


class DetectionAnswers(TaskAnswers):
    """Boxes: ``serve`` answers ``{"boxes": [{"label", "score", "box": [x1, y1, x2, y2]}]}``, ``infer`` a CSV row per
    box and COCO's results json, both in each file's own pixels; v2 gives ``boxes``, ``scores``, ``labels``."""

    name = "detection"
    output_kind = "detections (N, D, 6): x1, y1, x2, y2, score, class per row, in the input's pixels; class -1 pads"
    output_name = "boxes"
    ranks_classes = False
    state_keys = ("score_threshold", "nms_iou", "max_detections", "category_ids")
    #: The state every detection model has; ``category_ids`` (the data's COCO ids of the classes) only where the
    #: data had ids of its own.
    required_keys = ("score_threshold", "nms_iou", "max_detections")
    min_outputs = 1
    agreement_name = "box_agreement"
    score_name = "map"
    metric_name = "map"
    on_source = True
    results_file = "coco.json"
    int8 = False
    tile_rule = "boxes"

    def problem(self) -> str | None:
        """Names, the three thresholds, and one category id per name where there are ids."""
        if not self.class_names:
            return f"class_names needs at least one name for task {self.name}"
        missing = [key for key in self.required_keys if key not in self.state]
        if missing:
            return f"task {self.name} needs {', '.join(missing)}"
        ids = self.state.get("category_ids")
        if ids is not None and (not isinstance(ids, list) or len(ids) != len(self.class_names)):
            return f"category_ids needs one id per class name for task {self.name}, got {ids!r}"
        return None

    @classmethod
    def state_of(cls, data) -> dict:
        """The thresholds, as numbers, and the category ids where there are."""
        return {key: data[key] for key in cls.state_keys if data.get(key) is not None}

    def contract_fields(self) -> dict:
        """The task, its thresholds, and how to read a box: ``box_format``, and ``box_mapping`` from the graph's
        input to the file's pixels (``preprocessing`` holds the resize and crop sizes it names)."""
        return {
            **super().contract_fields(),
            "box_format": "xyxy: x1, y1, x2, y2 in pixels, the graph's on its input, infer's and serve's on the file's",
            "box_mapping": "for a W x H file (after its EXIF orientation) and preprocessing's resize_size [rh, rw] and"
            " image_size [h, w]: s = max(rh / H, rw / W); nw = max(rw, round(W * s)), nh = max(rh, round(H * s));"
            " left = (nw - rw) // 2 + (rw - w) // 2, top = (nh - rh) // 2 + (rh - h) // 2;"
            " x_file = (x + left) * W / nw, y_file = (y + top) * H / nh, clipped to the file",
        }

    def logits_shape(self, image_size: Sequence[int]) -> list:
        """``[max_detections, 6]``."""
        return [int(self.state["max_detections"]), 6]

    def output_specs(self, image_size: Sequence[int]) -> list[dict]:
        """``boxes`` FP32 ``[-1, D, 4]``, ``scores`` FP32 ``[-1, D]``, ``labels`` INT64 ``[-1, D]`` (-1 pads)."""
        d = int(self.state["max_detections"])
        return [
            {"name": "boxes", "datatype": "FP32", "shape": [-1, d, 4]},
            {"name": "scores", "datatype": "FP32", "shape": [-1, d]},
            {"name": "labels", "datatype": "INT64", "shape": [-1, d]},
        ]

    def output_tensors(self, logits: np.ndarray) -> dict[str, tuple[np.ndarray, str]]:
        """The detections split as :meth:`output_specs` names them."""
        return {
            "boxes": (logits[..., :4], "FP32"),
            "scores": (logits[..., 4], "FP32"),
            "labels": (logits[..., 5].astype(np.int64), "INT64"),
        }

    def outputs(self, logits: np.ndarray) -> np.ndarray:
        """The detections, float64 (padding kept: rows of class -1)."""
        return np.asarray(logits, dtype=np.float64)

    def answer(self, p: np.ndarray, k: int) -> tuple[list[tuple[str, float]], None]:
        """Each detection's ``(class, score)``, best first."""
        return [(self.class_names[int(r[5])], float(r[4])) for r in p if r[5] >= 0], None

    def source_answer(self, p: np.ndarray, source, view: dict) -> list[dict]:
        """The detections on the source file's own pixels: ``[{"label", "score", "box": [x1, y1, x2, y2]}]``."""
        width, height = size = source_size(source)
        scale_x, scale_y, left, top = view_geometry(size, view["resize_size"], view["image_size"])
        found = []
        for x1, y1, x2, y2, score, label in p[p[:, 5] >= 0].tolist():
            box = [(x1 + left) / scale_x, (y1 + top) / scale_y, (x2 + left) / scale_x, (y2 + top) / scale_y]
            box = [min(max(v, 0.0), limit) for v, limit in zip(box, (width, height, width, height), strict=True)]
            found.append({"label": self.class_names[int(label)], "score": float(score), "box": box})
        return found

    def json_answer(self, answer, k: int) -> dict:
        """``{"boxes": [...]}``."""
        return {"boxes": answer}

    def csv_columns(self, k: int) -> list[str]:
        """A row per box: ``label, score, x1, y1, x2, y2`` (the file's pixels)."""
        return ["label", "score", "x1", "y1", "x2", "y2"]

    def csv_rows(self, answer: list[dict], k: int) -> list[list[str]]:
        """A row per box; one empty row for a file without any."""
        rows = [[b["label"], f"{b['score']:.6f}", *(f"{v:.2f}" for v in b["box"])] for b in answer]
        return rows or [[""] * 6]

    def results(self, answers: list[tuple[str, object]]) -> bytes:
        """COCO's results json: ``[{"image_id", "file_name", "category_id", "category_name", "bbox": [x, y, w, h],
        "score"}]``, the image id a file's place in ``infer``'s input order; the category id the data's own
        (``category_ids``: a COCO file's ids, 1, 5, 90 as they were) where the model records them, else the class's
        index + 1 (COCO counts from 1)."""
        ids = self.state.get("category_ids") or [i + 1 for i in range(len(self.class_names))]
        rows = []
        for image_id, (file, found) in enumerate(answers):
            for b in found:
                x1, y1, x2, y2 = b["box"]
                category = ids[self.class_names.index(b["label"])]
                bbox = [round(v, 3) for v in (x1, y1, x2 - x1, y2 - y1)]
                row = {"image_id": image_id, "file_name": file, "category_id": category, "category_name": b["label"]}
                row["bbox"] = bbox
                rows.append({**row, "score": round(b["score"], 6)})
        return json.dumps(rows).encode()

    def agreement(self, outputs: np.ndarray, reference: np.ndarray) -> float:
        """The share of eager's boxes matched by one of ``outputs`` of the same class at IoU >= 0.99, its score within
        1e-3 (1.0 when eager found none and neither did ``outputs``). A box on the edge (:meth:`on_edge`) that either
        side lacks is excused: a last-digit difference in its score decides whether it is kept at all."""
        matched = total = 0
        for found, expected in zip(outputs, reference, strict=True):
            full = bool((found[:, 5] >= 0).all() or (expected[:, 5] >= 0).all())
            found, expected = found[found[:, 5] >= 0], expected[expected[:, 5] >= 0]
            edges = self.on_edge(expected, full)
            total += max(len(expected), bool((~self.on_edge(found, full)).any()))
            for row, edge in zip(expected, edges, strict=True):
                same = found[(found[:, 5] == row[5]) & (np.abs(found[:, 4] - row[4]) <= SCORE_TOLERANCE)]
                matched += edge or (bool(len(same)) and bool((iou(row[:4], same[:, :4]) >= MATCH_IOU).any()))
        return matched / total if total else 1.0

    def on_edge(self, rows: np.ndarray, full: bool) -> np.ndarray:
        """Which of an image's kept boxes ``(m, 6)`` a score 1e-3 off could drop or let in: those within 1e-3 of
        ``score_threshold``, and, where every one of ``max_detections`` slots is used (``full``), of the lowest score
        kept."""
        scores = rows[:, 4]
        edge = np.abs(scores - float(self.state["score_threshold"])) <= SCORE_TOLERANCE
        if full and len(rows):
            edge |= scores <= scores.min() + SCORE_TOLERANCE
        return edge

    def close(self, outputs: np.ndarray, reference: np.ndarray, rtol: float, atol: float) -> bool:
        """Every eager box matched (:meth:`agreement`) and no other but on the edge: boxes come in any order, not
        element by element."""
        if self.agreement(outputs, reference) != 1.0:
            return False
        for found, expected in zip(outputs, reference, strict=True):
            full = bool((found[:, 5] >= 0).all() or (expected[:, 5] >= 0).all())
            found, expected = found[found[:, 5] >= 0], expected[expected[:, 5] >= 0]
            if (~self.on_edge(found, full)).sum() != (~self.on_edge(expected, full)).sum():
                return False
        return True

    def scored(self, outputs: np.ndarray, targets) -> float:
        """COCO's mAP (IoU 0.50:0.95) of the detections against each image's ``(m, 5)`` true boxes (faster-coco-eval,
        or pycocotools)."""
        return coco_map(outputs, targets, len(self.class_names))


def iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """IoU of one ``x1, y1, x2, y2`` box with each of ``(m, 4)``."""
    x1, y1 = np.maximum(box[0], boxes[:, 0]), np.maximum(box[1], boxes[:, 1])
    x2, y2 = np.minimum(box[2], boxes[:, 2]), np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1]) + (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return inter / np.maximum(area - inter, 1e-12)


def coco_map(detections: np.ndarray, targets, num_classes: int) -> float:
    """COCO's mAP of ``(N, D, 6)`` detections against each image's ``(m, 5)`` true boxes."""
    try:
        from faster_coco_eval import COCO
        from faster_coco_eval import COCOeval_faster as COCOeval
    except ImportError:
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval

    images = [{"id": i} for i in range(len(detections))]
    truth = []
    for i, boxes in enumerate(targets):
        for x1, y1, x2, y2, label in np.asarray(boxes).reshape(-1, 5).tolist():
            box = {"id": len(truth) + 1, "image_id": i, "category_id": int(label) + 1, "iscrowd": 0}
            truth.append({**box, "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1)})
    found = [
        {"image_id": i, "category_id": int(r[5]) + 1, "bbox": [r[0], r[1], r[2] - r[0], r[3] - r[1]], "score": r[4]}
        for i, rows in enumerate(detections)
        for r in rows.tolist()
        if r[5] >= 0
    ]
    if not truth or not found:
        return 0.0
    gt = COCO()
    gt.dataset = {"images": images, "annotations": truth, "categories": [{"id": c + 1} for c in range(num_classes)]}
    gt.createIndex()
    evaluation = COCOeval(gt, gt.loadRes(found), "bbox")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    return float(evaluation.stats[0])


ANSWERS = DetectionAnswers
