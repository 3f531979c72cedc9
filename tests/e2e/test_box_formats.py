"""Every box format through the real commands: the same pictures and boxes (tests/box_sets.py) written as COCO json
(category ids 1, 5, 90), YOLO, the boxes CSV, Pascal VOC in both layouts, Roboflow's TensorFlow CSV, LabelMe, CVAT for
images and Label Studio's JSON and JSON-MIN each fit (1 epoch, one seed) to the same ``metrics.json``, within 1e-4;
the COCO run, exported and run by ``infer``, gives COCO's results json the dataset's own category ids and names back.
One subprocess runs the fits, another export and infer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.box_sets import CLASSES, COCO_IDS, WRITERS, pictures, write
from tests.helpers import CONFIGS, DEFAULT_CONFIG, best_checkpoint, run_cases

pytestmark = pytest.mark.slow
#: Metrics agree to this across formats.
TOLERANCE = 1e-4


def fit_args(root: Path, runs: Path, name: str, options: dict) -> list[str]:
    labels = ["--data.labels", options["labels"]] if "labels" in options else []
    return [
        "fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
        "--config", str(CONFIGS / "task" / "detection.yaml"), "--data.root", str(root), *labels,
        f"--data.init_args.cache_dir={runs / ('cache-' + name)}", "--data.init_args.num_workers=0",
        "--data.init_args.batch_size=8", "--trainer.max_epochs=1", "--model.overlays=0",
        f"--trainer.logger.init_args.save_dir={runs}", f"--trainer.logger.init_args.name={name}",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def fits(tmp_path_factory) -> dict:
    """One fit per writer of the same 30 pictures, and the COCO one again at score threshold 0 (every class
    answers), exported to ONNX and run by ``infer`` on its test images."""
    pytest.importorskip("faster_coco_eval")
    tmp = tmp_path_factory.mktemp("box_formats")
    shown, runs = pictures(30, seed=5), tmp / "runs"
    roots = {form: tmp / form for form in WRITERS}
    options = {form: write(form, root, shown) for form, root in roots.items()}
    cases = [{"argv": fit_args(roots[form], runs, form, options[form])} for form in WRITERS]
    cases.append({"argv": [*fit_args(roots["coco"], runs, "scored", {}), "--model.score_threshold=0.0"]})
    results = dict(zip([*WRITERS, "scored"], run_cases(tmp, cases, timeout=1800), strict=True))
    export, out = tmp / "export", tmp / "infer" / "boxes.csv"
    if results["scored"]["code"] == 0:  # the COCO fit again, every detection kept: infer answers every class
        ckpt = best_checkpoint(runs / "scored" / "version_0")
        files = sorted(str(p) for p in (roots["coco"] / "images" / "test").glob("*.png"))
        later = [
            {"argv": ["export", "--ckpt_path", str(ckpt), "--out", str(export), "--formats", "onnx"]},
            {"argv": ["infer", "--model", str(export / "model.onnx"), "--input", *files, "--output", str(out)]},
        ]
        out.parent.mkdir()
        results |= dict(zip(("export", "infer"), run_cases(out.parent, later, timeout=600), strict=True))
    return {"runs": runs, "results": results, "export": export, "out": out}


def test_each_format_fits_to_the_same_metrics(fits) -> None:
    metrics = {}
    for form in WRITERS:
        result = fits["results"][form]
        assert result["code"] == 0, (form, result["stderr"][-3000:])
        metrics[form] = json.loads((fits["runs"] / form / "version_0" / "metrics.json").read_text())
    first = {k: v for k, v in metrics["yolo"].items() if isinstance(v, float)}
    assert {"test/map", "test/map50", "test/mar100", *(f"test/ap/{c}" for c in CLASSES)} <= set(first)
    assert first["test/map50"] > 0, first  # it learned something: agreement is not of zeros
    for form, values in metrics.items():
        assert values.keys() == metrics["yolo"].keys(), form
        assert all(abs(values[k] - v) <= TOLERANCE for k, v in first.items()), (form, values, first)


def test_infers_coco_results_give_the_datasets_category_ids_and_names_back(fits) -> None:
    for step in ("export", "infer"):
        assert fits["results"][step]["code"] == 0, fits["results"][step]["stderr"][-3000:]
    contract = json.loads((fits["export"] / "model.json").read_text())
    assert contract["class_names"] == list(CLASSES) and contract["category_ids"] == list(COCO_IDS)
    rows = json.loads(fits["out"].with_suffix(".coco.json").read_text())
    pairs = {(row["category_id"], row["category_name"]) for row in rows}
    assert pairs == set(zip(COCO_IDS, CLASSES, strict=True)), pairs
