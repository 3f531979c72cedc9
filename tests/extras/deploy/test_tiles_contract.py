"""A model trained on tiles, as model.json states it and infer and serve follow it: each file at its own size, cut into
windows of the graph's input, blended (segmentation) or merged across the seams (detection), on NumPy alone."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from litstarter._engine import tiles
from litstarter.extras.deploy.backends import Backend
from litstarter.extras.deploy.contract import ContractError, ModelContract
from litstarter.extras.deploy.infer import predict_files
from tests.unit._engine.test_tiles import OBJECTS, KnownField, numpy_run, visible_parts

TILING = {"size": [64, 64], "overlap": 32, "max_side": 4096}


def segmentation_contract(**changes) -> ModelContract:
    fields = {
        "class_names": ["background", "a", "b"],
        "channels": 1,
        "image_size": (64, 64),
        "resize_size": (256, 256),
        "mean": [0.5],
        "std": [0.25],
        "task": "segmentation",
        "task_state": {"ignore_index": 255},
        "tiling": TILING,
    }
    return ModelContract(**{**fields, **changes})


def detection_contract() -> ModelContract:
    state = {"score_threshold": 0.05, "nms_iou": 0.5, "max_detections": 10}
    return segmentation_contract(
        class_names=["a", "b"], image_size=(128, 128), task="detection", task_state=state,
        tiling={"size": [128, 128], "overlap": 32, "max_side": 4096},
    )  # fmt: skip


def test_model_json_records_the_tiling_and_its_rules() -> None:
    data = segmentation_contract().to_dict()
    tiling = data["tiling"]
    assert {k: tiling[k] for k in ("size", "overlap", "max_side", "rule")} == {**TILING, "rule": "blend"}
    assert set(tiling) == {"size", "overlap", "max_side", "rule", "own_size", "windows", "blend"}
    assert "q = overlap // 4 = 8" in tiling["blend"] and "r = max(1, overlap // 2) = 16" in tiling["blend"]
    resize = data["preprocessing"]["resize"]
    assert resize["fit"] == "own size" and resize["max_side"] == 4096 and "size" not in resize
    assert data["input"]["shape"] == ["batch", 1, 64, 64]  # the graph takes one window
    again = ModelContract.from_json(json.dumps(data))
    assert again == segmentation_contract()
    merge = detection_contract().to_dict()["tiling"]
    assert merge["rule"] == "boxes" and "nms_iou (0.5)" in merge["merge"] and "blend" not in merge


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"task": "single_label", "task_state": {}}, "tiling: task single_label does not slide windows"),
        (
            {"tiling": {"size": [32, 32], "overlap": 8}},
            r"tiling.size is \[32, 32\] but preprocessing.image_size is \[64, 64\]",
        ),
        ({"tiling": {"size": [64, 64], "overlap": 60}}, "tiling.overlap must be 0 to half"),
    ],
)
def test_a_tiling_the_model_cannot_follow_is_refused_naming_the_key(changes, message) -> None:
    with pytest.raises(ContractError, match=message) as refused:
        segmentation_contract(**changes)
    assert "\n" not in str(refused.value)


def segmentation_backend(tmp_path: Path) -> tuple[Backend, torch.nn.Module]:
    net = KnownField(channels=1, classes=3).eval()
    return Backend(tmp_path / "model.onnx", "onnx", segmentation_contract(), numpy_run(net), "numpy"), net


def test_infer_predicts_a_file_4x_the_window_as_the_whole_image(tmp_path: Path) -> None:
    backend, net = segmentation_backend(tmp_path)
    pixels = np.random.default_rng(3).integers(0, 256, (256, 256), dtype=np.uint8)
    Image.fromarray(pixels).save(tmp_path / "large.png")
    Image.fromarray(pixels[:40, :50]).save(tmp_path / "small.png")  # smaller than a window: padded, cut back
    (large, small) = predict_files(backend, [tmp_path / "large.png", tmp_path / "small.png"], batch_size=4)
    with torch.no_grad():
        whole = net(torch.from_numpy(pixels)[None, None])[0].argmax(dim=0).numpy()
    assert large.answer.shape == (256, 256) and (large.answer == whole).mean() == 1.0
    assert small.answer.shape == (40, 50)


def test_infer_finds_each_object_once_in_the_files_pixels(tmp_path: Path) -> None:
    contract = detection_contract()
    where = tiles.positions(512, 512, contract.tiles)
    backend = Backend(tmp_path / "model.onnx", "onnx", contract, visible_parts(where, 128), "numpy")
    Image.new("L", (512, 512)).save(tmp_path / "scene.png")
    (found,) = predict_files(backend, [tmp_path / "scene.png"], batch_size=6)
    boxes = sorted((*b["box"], contract.class_names.index(b["label"])) for b in found.answer)
    assert boxes == sorted(map(tuple, OBJECTS.tolist()))


def test_serve_answers_a_file_larger_than_a_window_by_its_windows(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from litstarter.extras.serve.app import create_app
    from litstarter.extras.serve.options import ServeOptions

    backend, net = segmentation_backend(tmp_path)
    pixels = np.random.default_rng(4).integers(0, 256, (200, 256), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    with torch.no_grad():
        whole = net(torch.from_numpy(pixels)[None, None])[0].argmax(dim=0).numpy()
    app = create_app(lambda: [backend], ServeOptions(max_batch_size=8), "model")
    with TestClient(app) as client:
        for _ in range(100):
            if client.get("/health").status_code == 200:
                break
            time.sleep(0.05)
        answer = client.post("/predict", content=buffer.getvalue(), headers={"Content-Type": "image/png",
                                                                             "Accept": "image/png"})  # fmt: skip
        assert answer.status_code == 200, answer.text
        assert (np.asarray(Image.open(io.BytesIO(answer.content))) == whole).all()
        v2 = client.post("/v2/models/model/infer", json={"inputs": [{"name": "image_bytes", "datatype": "BYTES",
                                                                     "shape": [1], "data": ["eA=="]}]})  # fmt: skip
        assert v2.status_code == 400 and "POST the file to /predict" in v2.json()["error"]
