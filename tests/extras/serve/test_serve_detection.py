"""Detection end to end: a fit on digit canvases given as COCO json, its exports verified box by box, COCO's own
evaluator agreeing with the fit's test mAP on ``infer``'s results json, and one answer everywhere: eager, the ONNX
export through ``infer``, a real ``serve`` process and ``tritonclient`` over v2 give the same boxes on 20 files of
mixed sizes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch
from PIL import Image

from tests.extras.serve.test_serve import start_server
from tests.helpers import CONFIGS, DEFAULT_CONFIG, best_checkpoint, run_litstarter

pytestmark = pytest.mark.slow
FILES = 20
#: Two boxes are the same box at this IoU or more (litstarter.tasks.detection_answers.MATCH_IOU).
SAME_BOX = 0.99


@pytest.fixture(scope="module")
def detection_run(tmp_path_factory) -> dict:
    """A short fit on 600 canvases written as COCO json, its best checkpoint exported with the default formats, and
    20 files of mixed sizes and modes. Read-only."""
    pytest.importorskip("faster_coco_eval")
    from litstarter.data.digit_boxes import digit_boxes, write_canvases, write_coco

    work = tmp_path_factory.mktemp("detection")
    data = work / "data"
    write_coco(data, write_canvases(data, 600, seed=3))
    fit = [
        "fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
        "--config", str(CONFIGS / "task" / "detection.yaml"), "--data.root", str(data),
        f"--data.init_args.cache_dir={work / 'cache'}", "--data.init_args.num_workers=0",
        "--data.init_args.batch_size=16", "--trainer.max_epochs=4",
        f"--trainer.logger.init_args.save_dir={work / 'runs'}", "--trainer.logger.init_args.name=boxes",
    ]  # fmt: skip
    run_litstarter(fit, timeout=900)
    run = work / "runs" / "boxes" / "version_0"
    export = work / "export"
    run_litstarter(["export", "--ckpt_path", str(best_checkpoint(run)), "--out", str(export)], timeout=600)
    images, _ = digit_boxes(FILES, seed=321)
    files = []
    for i, image in enumerate(images[:, 0]):
        picture = Image.fromarray(image)
        if i % 4 == 1:
            picture = picture.resize((128, 128), Image.BILINEAR).convert("RGB")  # twice the size, in colour
        elif i % 4 == 2:
            picture = picture.resize((96, 64), Image.BILINEAR)  # another aspect: the crop cuts its sides
        elif i % 4 == 3:
            picture = picture.convert("RGBA")
        files.append(work / "files" / f"{i:02d}.png")
        files[-1].parent.mkdir(exist_ok=True)
        picture.save(files[-1])
    return {"run": run, "export": export, "files": files, "data": data, "work": work}


def test_exports_match_eager_box_by_box_and_the_formats_they_cannot_have_are_said(detection_run) -> None:
    report = json.loads((detection_run["export"] / "export_report.json").read_text())
    assert (report["verification"]["agreement"], report["verification"]["score"]) == ("box_agreement", "map")
    for name in ("model.onnx", "model.ts", "weights.pt"):
        figures = report["artifacts"][name]
        assert figures["passed"] and figures["box_agreement"] == 1.0, (name, figures)
    assert set(report["skipped"]) == {"model.pt2", "model.int8.onnx"}
    assert "NMS" in report["skipped"]["model.pt2"] and "INT8" in report["skipped"]["model.int8.onnx"]
    contract = json.loads((detection_run["export"] / "model.json").read_text())
    assert contract["task"] == "detection" and contract["output"]["shape"] == ["batch", 100, 6]
    assert contract["box_format"].startswith("xyxy") and "x_file" in contract["box_mapping"]
    assert {"score_threshold": 0.05, "nms_iou": 0.5, "max_detections": 100}.items() <= contract.items()
    assert contract["artifacts"]["model.onnx"]["dynamic_batch"] is True


def test_naming_a_format_the_detector_cannot_have_is_one_line_and_exit_1(detection_run, tmp_path: Path) -> None:
    ckpt = best_checkpoint(detection_run["run"])
    proc = run_litstarter(
        ["export", "--ckpt_path", str(ckpt), "--out", str(tmp_path / "x"), "--formats", "pt2"], check=False
    )
    assert proc.returncode == 1
    refused = [line for line in proc.stderr.splitlines() if line.startswith("litstarter export: rejected")]
    assert refused == [
        "litstarter export: rejected model.pt2: torch.export cannot capture torchvision's NMS (its output's size"
        " depends on the data)"
    ]
    assert "Traceback" not in proc.stderr


def test_cocoeval_on_infers_results_json_gives_the_fits_test_map(detection_run, tmp_path: Path) -> None:
    from faster_coco_eval import COCO
    from faster_coco_eval import COCOeval_faster as COCOeval

    data, export = detection_run["data"], detection_run["export"]
    truth = json.loads((data / "annotations" / "instances_test.json").read_text())
    out = tmp_path / "boxes.csv"
    files = [str(data / image["file_name"]) for image in truth["images"]]
    run_litstarter(["infer", "--model", str(export / "model.onnx"), "--input", *files, "--output", str(out)])
    ids = {Path(image["file_name"]).name: image["id"] for image in truth["images"]}
    results = json.loads(out.with_suffix(".coco.json").read_text())
    for row in results:
        row["image_id"] = ids[Path(row.pop("file_name")).name]  # infer's ids are its input order: the file names
    ground = COCO()
    ground.dataset = truth
    ground.createIndex()
    evaluation = COCOeval(ground, ground.loadRes(results), "bbox")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    fit = json.loads((detection_run["run"] / "metrics.json").read_text())
    assert fit["test/map"] > 0.05, fit  # it learned something, so agreement is not two zeros
    assert abs(evaluation.stats[0] - fit["test/map"]) <= 0.01, (evaluation.stats[0], fit["test/map"])
    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) >= len(results) and {r["file"] for r in rows} >= set(files[:5])


def test_eager_infer_serve_and_tritonclient_give_the_same_boxes(detection_run, tmp_path: Path) -> None:
    triton_http = pytest.importorskip("tritonclient.http")
    from litstarter.extras.deploy.checkpoint import network_from_checkpoint
    from litstarter.extras.deploy.contract import ModelContract
    from litstarter.tasks.answers import view_geometry
    from litstarter.tasks.detection_answers import iou

    export, files = detection_run["export"], detection_run["files"]
    contract = ModelContract.from_json((export / "model.json").read_text())
    answers = contract.answers()
    net, _ = network_from_checkpoint(best_checkpoint(detection_run["run"]))
    batch = np.stack([contract.load_image(f) for f in files])  # (20, 1, 64, 64): the contract's reference
    with torch.no_grad():
        eager = net.eval()(torch.from_numpy(batch)).numpy()  # (20, 100, 6) in the input's pixels
    view = {"resize_size": contract.resize_size, "image_size": contract.image_size}
    expected = {f.name: answers.source_answer(p, f, view) for p, f in zip(eager, files, strict=True)}
    assert sum(len(v) for v in expected.values()) >= FILES  # something found to agree on
    wide = view_geometry((96, 64), contract.resize_size, contract.image_size)
    assert wide[2] > 0  # the wide file's sides are cut: its boxes move by the crop

    out = tmp_path / "boxes.csv"
    run_litstarter(["infer", "--model", str(export / "model.onnx"), "--input", *map(str, files), "--output", str(out)])
    with open(out, newline="") as handle:
        inferred: dict[str, list] = {}
        for row in csv.DictReader(handle):
            box = [float(row[k]) for k in ("x1", "y1", "x2", "y2")] if row["label"] else None
            inferred.setdefault(Path(row["file"]).name, []).extend([(row["label"], box)] if box else [])
    server = start_server(export / "model.onnx")
    try:
        for path in files:
            served = httpx.post(
                f"{server.url}/predict", content=path.read_bytes(), headers={"Content-Type": "image/png"}
            )
            assert served.status_code == 200, served.text
            served_boxes = [(b["label"], b["box"]) for b in served.json()["boxes"]]
            want = [(b["label"], b["box"]) for b in expected[path.name]]
            assert same_boxes(served_boxes, want, iou), path.name
            assert same_boxes(inferred.get(path.name, []), want, iou), path.name
            with Image.open(path) as image:  # in the file's own pixels
                assert all(b[2] <= image.width + 1e-3 and b[3] <= image.height + 1e-3 for _, b in served_boxes)
        client = triton_http.InferenceServerClient(server.url.removeprefix("http://"), network_timeout=30)
        tensor = triton_http.InferInput("input", list(batch.shape), "UINT8")
        tensor.set_data_from_numpy(batch)
        result = client.infer("model", [tensor])
        boxes, scores, labels = (result.as_numpy(n) for n in ("boxes", "scores", "labels"))
        assert boxes.shape == (FILES, 100, 4) and labels.dtype == np.int64
        remote = np.concatenate([boxes, scores[..., None], labels[..., None].astype(np.float32)], axis=-1)
        assert answers.agreement(remote, eager) == 1.0
    finally:
        assert server.stop() == 0, server.output()


def same_boxes(found: list, expected: list, iou) -> bool:
    """Each expected ``(label, box)`` has one of ``found`` with its label at IoU >= 0.99, and as many were found."""
    if len(found) != len(expected):
        return False
    for label, box in expected:
        candidates = np.asarray([b for name, b in found if name == label]).reshape(-1, 4)
        if not len(candidates) or not (iou(np.asarray(box), candidates) >= SAME_BOX).any():
            return False
    return True


@pytest.fixture(scope="module")
def one_class_run(tmp_path_factory) -> dict:
    """A 2-epoch fit on 60 canvases whose boxes are all one class, ``digit`` (COCO json, one category), and its
    default export. Read-only."""
    pytest.importorskip("faster_coco_eval")
    from litstarter.data.digit_boxes import write_canvases, write_coco

    work = tmp_path_factory.mktemp("one_class")
    data = work / "data"
    write_coco(data, write_canvases(data, 60, seed=5))
    for path in (data / "annotations").glob("instances_*.json"):
        coco = json.loads(path.read_text())
        coco["categories"] = [{"id": 7, "name": "digit"}]
        for annotation in coco["annotations"]:
            annotation["category_id"] = 7
        path.write_text(json.dumps(coco))
    fit = [
        "fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
        "--config", str(CONFIGS / "task" / "detection.yaml"), "--data.root", str(data),
        f"--data.init_args.cache_dir={work / 'cache'}", "--data.init_args.num_workers=0",
        "--data.init_args.batch_size=8", "--trainer.max_epochs=2", "--model.overlays=0",
        f"--trainer.logger.init_args.save_dir={work / 'runs'}", "--trainer.logger.init_args.name=one",
    ]  # fmt: skip
    run_litstarter(fit, timeout=600)
    run = work / "runs" / "one" / "version_0"
    export = work / "export"
    run_litstarter(["export", "--ckpt_path", str(best_checkpoint(run)), "--out", str(export)], timeout=600)
    return {"run": run, "export": export, "test": sorted((data / "images" / "test").glob("*.png"))}


def test_one_class_fits_exports_infers_and_serves_over_both_routes(one_class_run, tmp_path: Path) -> None:
    """Detection's background is implicit: one class of boxes trains, scores (its AP is the mAP), exports, infers
    (COCO results under the dataset's own category id, 7) and serves, on /predict and the Open Inference Protocol."""
    metrics = json.loads((one_class_run["run"] / "metrics.json").read_text())
    assert metrics["test/ap/digit"] == metrics["test/map"] and metrics["test/map"] > 0, metrics
    export = one_class_run["export"]
    contract = json.loads((export / "model.json").read_text())
    assert contract["class_names"] == ["digit"] and contract["num_classes"] == 1, contract
    report = json.loads((export / "export_report.json").read_text())
    assert all(report["artifacts"][name]["passed"] for name in ("model.onnx", "model.ts", "weights.pt")), report
    files = one_class_run["test"]
    out = tmp_path / "boxes.csv"
    run_litstarter(["infer", "--model", str(export / "model.onnx"), "--input", *map(str, files), "--output", str(out)])
    with open(out, newline="") as handle:
        labels = {row["label"] for row in csv.DictReader(handle)}
    results = json.loads(out.with_suffix(".coco.json").read_text())
    assert (
        labels == {"digit"} and results and {(r["category_id"], r["category_name"]) for r in results} == {(7, "digit")}
    )
    server = start_server(export / "model.onnx")
    try:
        served = httpx.post(
            f"{server.url}/predict", content=files[0].read_bytes(), headers={"Content-Type": "image/png"}
        )
        assert served.status_code == 200 and served.json()["boxes"], served.text
        assert {b["label"] for b in served.json()["boxes"]} == {"digit"}
        with Image.open(files[0]) as image:
            pixels = np.asarray(image.convert("L"), dtype=np.uint8)[None, None]
        tensor = {"name": "input", "shape": list(pixels.shape), "datatype": "UINT8", "data": pixels.ravel().tolist()}
        answer = httpx.post(f"{server.url}/v2/models/model/infer", json={"inputs": [tensor]}, timeout=30)
        assert answer.status_code == 200, answer.text
        outputs = {o["name"]: o for o in answer.json()["outputs"]}
        found = [label for label in outputs["labels"]["data"] if label >= 0]
        assert outputs["labels"]["shape"] == [1, 100] and found and set(found) == {0}, outputs["labels"]
        assert len(found) == len(served.json()["boxes"])
    finally:
        assert server.stop() == 0, server.output()
