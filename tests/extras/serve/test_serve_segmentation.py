"""Segmentation end to end: a fit on the digit canvases, its exports verified on pixels, and one answer everywhere:
eager, the ONNX export through ``infer`` (a mask PNG per file, at the file's own size), a real ``serve`` process
(PNG and run-length JSON) and ``tritonclient`` over v2 (class maps) agree on 20 files of mixed sizes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch
from PIL import Image

from tests.extras.serve.test_serve import start_server
from tests.helpers import run_litstarter

pytestmark = pytest.mark.slow
FILES = 20
#: Pixel agreement an export must reach with eager (litstarter.tasks.segmentation_answers).
AGREEMENT = 0.999


@pytest.fixture(scope="module")
def segmentation_run(segmentation_export, tmp_path_factory) -> dict:
    """The shared segmentation fit and its default export (tests/conftest.py), and 20 files of mixed sizes and
    modes. Read-only."""
    from litstarter.data.digit_segmentation import digit_masks

    assert segmentation_export["code"] == 0, segmentation_export["stderr"][-3000:]
    work = tmp_path_factory.mktemp("segmentation_files")
    run, export = segmentation_export["run"], segmentation_export["export"]
    images, _ = digit_masks(FILES, seed=321)
    files = []
    for i, image in enumerate(images[:, 0]):
        picture = Image.fromarray(image)
        if i % 4 == 1:
            picture = picture.resize((96, 96), Image.BILINEAR).convert("RGB")  # larger, in colour
        elif i % 4 == 2:
            picture = picture.resize((72, 48), Image.BILINEAR)  # another aspect: the crop cuts its sides
        elif i % 4 == 3:
            picture = picture.convert("RGBA")
        files.append(work / "files" / f"{i:02d}.png")
        files[-1].parent.mkdir(exist_ok=True)
        picture.save(files[-1])
    return {"run": run, "export": export, "files": files}


def test_every_export_agrees_with_eager_on_pixels_and_int8_on_miou(segmentation_run) -> None:
    report = json.loads((segmentation_run["export"] / "export_report.json").read_text())
    assert (report["verification"]["agreement"], report["verification"]["score"]) == ("pixel_agreement", "miou")
    for name in ("model.onnx", "model.ts", "model.pt2", "weights.pt"):
        figures = report["artifacts"][name]
        assert figures["passed"] and figures["pixel_agreement"] >= AGREEMENT, (name, figures)
    int8 = report["artifacts"]["model.int8.onnx"]
    assert int8["passed"] == (round(100 * int8["miou_drop"], 2) <= 1.0), int8  # inclusive, at the printed 0.01 point
    contract = json.loads((segmentation_run["export"] / "model.json").read_text())
    assert contract["task"] == "segmentation" and contract["output"]["shape"] == ["batch", 11, 48, 48]
    assert contract["ignore_index"] == 255


def test_eager_infer_serve_and_tritonclient_give_the_same_masks(segmentation_run, tmp_path: Path) -> None:
    triton_http = pytest.importorskip("tritonclient.http")
    from litstarter.extras.deploy.checkpoint import network_from_checkpoint
    from litstarter.extras.deploy.contract import ModelContract
    from litstarter.tasks.segmentation_answers import map_back, source_size

    export, files = segmentation_run["export"], segmentation_run["files"]
    contract = ModelContract.from_json((export / "model.json").read_text())
    net, _ = network_from_checkpoint(segmentation_run["run"] / "checkpoints" / "last.ckpt")
    batch = np.stack([contract.load_image(f) for f in files])  # (20, 1, 48, 48): the contract's reference
    with torch.no_grad():
        eager = net(torch.from_numpy(batch)).argmax(dim=1).numpy().astype(np.uint8)  # (20, 48, 48)
    view = (contract.resize_size, contract.image_size)
    eager_files = [map_back(m, source_size(f), *view) for m, f in zip(eager, files, strict=True)]

    out = tmp_path / "masks.csv"
    run_litstarter(["infer", "--model", str(export / "model.onnx"), "--input", *map(str, files), "--output", str(out)])
    with open(out, newline="") as handle:
        rows = {Path(r["file"]).name: r for r in csv.DictReader(handle)}
    written = {}
    for path, expected in zip(files, eager_files, strict=True):
        row = rows[path.name]
        with Image.open(out.parent / row["mask"]) as mask:
            written[path.name] = np.asarray(mask)
        with Image.open(path) as image:
            assert written[path.name].shape == (image.height, image.width)  # at the file's own size
        assert (written[path.name] == expected).mean() >= AGREEMENT, path.name
        shares = [float(row[f"fraction_{n}"]) for n in contract.class_names]
        assert sum(shares) <= 1.0 + 1e-5 and shares[0] > 0.5  # mostly background
    assert (written["02.png"] == 255).any()  # the crop cut the wide file's sides: no class there

    server = start_server(export / "model.onnx")
    try:
        for path in files:
            body, png = path.read_bytes(), {"Content-Type": "image/png", "Accept": "image/png"}
            served = httpx.post(f"{server.url}/predict", content=body, headers=png)
            assert served.headers["content-type"] == "image/png"
            assert np.array_equal(np.asarray(Image.open(io.BytesIO(served.content))), written[path.name])
            rle = httpx.post(f"{server.url}/predict", content=body, headers={"Content-Type": "image/png"}).json()
            assert np.array_equal(decode_rle(rle), written[path.name])
        client = triton_http.InferenceServerClient(server.url.removeprefix("http://"), network_timeout=30)
        tensor = triton_http.InferInput("input", list(batch.shape), "UINT8")
        tensor.set_data_from_numpy(batch)
        result = client.infer("model", [tensor])
        maps, logits = result.as_numpy("class_map"), result.as_numpy("logits")
        assert maps.dtype == np.uint8 and maps.shape == (FILES, 48, 48) and logits.shape == (FILES, 11, 48, 48)
        assert (maps == eager).mean() >= AGREEMENT
    finally:
        assert server.stop() == 0, server.output()


def decode_rle(answer: dict) -> np.ndarray:
    """The class map of ``serve``'s run-length JSON (COCO's uncompressed counts, column-major; 255 where no
    segment covers a pixel)."""
    height, width = answer["size"]
    out = np.full(height * width, 255, dtype=np.uint8)
    for segment in answer["segments"]:
        counts, position, on = segment["rle"]["counts"], 0, False
        for run in counts:
            if on:
                out[position : position + run] = segment["index"]
            position, on = position + run, not on
    return out.reshape(width, height).T
