"""Detection's answers keep the data's own category ids: COCO's results ``infer`` writes give each box the id its
class had in the annotations (1, 5, 90), not its index + 1, where ``model.json`` records them; without them the ids
are 1..K as before; a list of ids that does not match the names is refused by the contract."""

from __future__ import annotations

import json

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
