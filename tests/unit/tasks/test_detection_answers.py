"""Detection's answers keep the data's own category ids: COCO's results ``infer`` writes give each box the id its
class had in the annotations (1, 5, 90), not its index + 1, where ``model.json`` records them; without them the ids
are 1..K as before; a list of ids that does not match the names is refused by the contract."""

from __future__ import annotations

import json

import numpy as np

from litstarter.tasks.detection_answers import DetectionAnswers

THRESHOLDS = {"score_threshold": 0.05, "nms_iou": 0.5, "max_detections": 100}
FOUND = [("a.png", [{"label": "ring", "score": 0.9, "box": [1.0, 2.0, 11.0, 22.0]}, {"label": "bar", "score": 0.5,
         "box": [0.0, 0.0, 4.0, 4.0]}])]  # fmt: skip


def test_results_give_the_datas_category_ids_and_names_back() -> None:
    answers = DetectionAnswers(["bar", "dot", "ring"], {**THRESHOLDS, "category_ids": [1, 5, 90]})
    assert answers.problem() is None and answers.contract_fields()["category_ids"] == [1, 5, 90]
    rows = json.loads(answers.results(FOUND))
    assert [(r["category_id"], r["category_name"]) for r in rows] == [(90, "ring"), (1, "bar")]
    assert rows[0]["bbox"] == [1.0, 2.0, 10.0, 20.0]


def test_without_ids_they_are_the_class_index_plus_one_and_model_json_has_none() -> None:
    answers = DetectionAnswers(["bar", "dot", "ring"], THRESHOLDS)
    assert answers.problem() is None and "category_ids" not in answers.contract_fields()
    assert [r["category_id"] for r in json.loads(answers.results(FOUND))] == [3, 1]
    assert DetectionAnswers.state_of({**THRESHOLDS, "category_ids": [1, 5, 90]})["category_ids"] == [1, 5, 90]


def test_ids_that_do_not_match_the_names_are_a_problem() -> None:
    answers = DetectionAnswers(["bar", "dot", "ring"], {**THRESHOLDS, "category_ids": [1, 5]})
    assert answers.problem() == "category_ids needs one id per class name for task detection, got [1, 5]"


def detections(*rows: tuple[float, ...], slots: int = 4) -> np.ndarray:
    """One image's ``(1, slots, 6)`` detections: ``rows`` then padding (class -1)."""
    out = np.full((1, slots, 6), -1.0)
    out[0, : len(rows)] = rows
    return out


def test_a_box_a_score_change_could_drop_is_excused_any_other_missing_box_is_not() -> None:
    answers = DetectionAnswers(["bar", "dot", "ring"], {**THRESHOLDS, "max_detections": 4})
    eager = detections((0, 0, 10, 10, 0.9, 0), (20, 20, 30, 30, 0.0505, 1))  # the second 5e-4 over score_threshold
    assert answers.agreement(detections((0, 0, 10, 10, 0.9, 0)), eager) == 1.0
    assert answers.close(detections((0, 0, 10, 10, 0.9, 0)), eager, 1e-3, 1e-5)
    assert answers.agreement(detections((20, 20, 30, 30, 0.0505, 1)), eager) == 0.5  # the sure box is missing
    assert not answers.close(detections((20, 20, 30, 30, 0.0505, 1)), eager, 1e-3, 1e-5)
    assert not answers.close(detections((0, 0, 10, 10, 0.9, 0), (40, 40, 50, 50, 0.6, 2)), eager, 1e-3, 1e-5)


def test_where_every_slot_is_used_the_lowest_kept_score_is_on_the_edge() -> None:
    answers = DetectionAnswers(["bar"], {**THRESHOLDS, "max_detections": 2})
    eager = detections((0, 0, 10, 10, 0.9, 0), (20, 20, 30, 30, 0.40, 0), slots=2)
    swapped = detections((0, 0, 10, 10, 0.9, 0), (50, 50, 60, 60, 0.4004, 0), slots=2)  # a near-tie for the last slot
    assert answers.agreement(swapped, eager) == 1.0 and answers.close(swapped, eager, 1e-3, 1e-5)
    assert answers.agreement(detections((50, 50, 60, 60, 0.4004, 0), slots=2), eager) == 0.5
