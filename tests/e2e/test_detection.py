"""Detection through the commands: the same canvases as COCO json, YOLO txt and a boxes CSV fit to identical
metrics; ``inspect`` reports boxes per image and per class and lists bad annotations instead of failing; ``cv``
refuses boxes in one line (one class of them too: not as too few classes); ``tune`` searches a detector of one class
(the background is implicit) on ``val/map``. One subprocess runs every command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import CONFIGS, DEFAULT_CONFIG, REPO, assert_refused, run_cases

pytestmark = pytest.mark.slow
FORMS = {"coco": [], "yolo": [], "csv": ["--data.labels", "boxes.csv"]}


def fit_args(root: Path, runs: Path, name: str) -> list[str]:
    return [
        "fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
        "--config", str(CONFIGS / "task" / "detection.yaml"), "--data.root", str(root),
        f"--data.init_args.cache_dir={runs / ('cache-' + name)}", "--data.init_args.num_workers=0",
        "--data.init_args.batch_size=8", "--trainer.max_epochs=2", "--model.overlays=0",
        f"--trainer.logger.init_args.save_dir={runs}", f"--trainer.logger.init_args.name={name}",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def commands(tmp_path_factory) -> dict:
    """Three fits (one per label format), inspect on a copy with three bad annotations, cv (of ten classes and of
    one) and a 2-trial tune on one class."""
    pytest.importorskip("faster_coco_eval")
    from litstarter.data.digit_boxes import write_box_csv, write_canvases, write_coco, write_yolo

    tmp = tmp_path_factory.mktemp("detection_commands")
    roots = {form: tmp / form for form in FORMS}
    for form, write in (("coco", write_coco), ("yolo", write_yolo), ("csv", write_box_csv)):
        write(roots[form], write_canvases(roots[form], 60, seed=11))
    bad = tmp / "bad"
    write_coco(bad, write_canvases(bad, 60, seed=11))
    annotations = bad / "annotations" / "instances_train.json"
    coco = json.loads(annotations.read_text())
    coco["annotations"][0]["bbox"] = [60, 60, 30, 30]  # past the 64 x 64 canvas
    coco["annotations"][1]["category_id"] = 77  # no such category
    coco["annotations"].append({"id": 999, "image_id": 12345, "category_id": 1, "bbox": [1, 1, 5, 5], "iscrowd": 0})
    annotations.write_text(json.dumps(coco))
    one = tmp / "one"  # every box of one class, "digit"
    write_coco(one, write_canvases(one, 60, seed=11))
    for path in (one / "annotations").glob("instances_*.json"):
        coco = json.loads(path.read_text())
        coco["categories"] = [{"id": 1, "name": "digit"}]
        coco["annotations"] = [{**a, "category_id": 1} for a in coco["annotations"]]
        path.write_text(json.dumps(coco))
    runs = tmp / "runs"
    folder = ["--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml")]
    task = ["--config", str(CONFIGS / "task" / "detection.yaml")]
    search = tmp / "search.yaml"
    search.write_text((REPO / "configs" / "search" / "detection.yaml").read_text())
    cases = [{"argv": [*fit_args(roots[form], runs, form), *extra]} for form, extra in FORMS.items()]
    cases += [
        {"argv": ["inspect", *folder, "--data.root", str(bad)]},
        {"argv": ["cv", *folder, *task, "--data.root", str(roots["coco"])]},
        {"argv": ["cv", *folder, *task, "--data.root", str(one)]},
        {
            "argv": [
                "tune", *folder, *task, "--search", str(search),
                "--trials", "2", "--data.root", str(one), "--trainer.max_epochs=1",
                "--data.init_args.num_workers=0", f"--trainer.logger.init_args.save_dir={runs / 'tune'}",
            ]
        },
    ]  # fmt: skip
    results = run_cases(tmp, cases, timeout=900)
    return {"runs": runs, "results": dict(zip([*FORMS, "inspect", "cv", "cv_one", "tune"], results, strict=True))}


def test_coco_yolo_and_a_csv_of_the_same_boxes_fit_to_identical_metrics(commands) -> None:
    metrics = {}
    for form in FORMS:
        result = commands["results"][form]
        assert result["code"] == 0, result["stderr"][-3000:]
        metrics[form] = json.loads((commands["runs"] / form / "version_0" / "metrics.json").read_text())
    assert {"test/map", "test/map50", "test/map75", "test/mar100"} <= set(metrics["coco"])
    assert metrics["yolo"] == metrics["coco"] and metrics["csv"] == metrics["coco"]


def test_inspect_counts_boxes_and_lists_bad_annotations_instead_of_failing(commands) -> None:
    result = commands["results"]["inspect"]
    assert result["code"] == 0, result["stderr"][-3000:]
    out = result["stdout"]
    assert "boxes (train): 1-4 per image" in out and "boxes per class (train): 0 " in out
    left_out = next(line for line in out.splitlines() if line.startswith("left out of the listing"))
    assert "3 bad box(es)" in left_out and "category_id 77" in left_out and "image_id 12345" in left_out
    assert "images/train/0000.png box 0 [60, 60, 90, 90]" in left_out


def test_cv_refuses_boxes_in_one_line(commands) -> None:
    assert_refused(commands["results"]["cv"], 2, "boxes targets", "not yet")
    message = assert_refused(commands["results"]["cv_one"], 2, "boxes targets", "not yet")  # not 'needs at least 2'
    assert "at least" not in message, message


def test_tune_searches_a_detector_of_one_class_on_its_map(commands) -> None:
    result = commands["results"]["tune"]
    assert result["code"] == 0, result["stderr"][-3000:]
    assert "2 trials (2 COMPLETE)" in result["stdout"] and "val/map" in result["stdout"]
