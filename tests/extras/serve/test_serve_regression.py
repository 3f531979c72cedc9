"""Regression end to end on the embedded counting canvases: the network beats the train mean and ridge regression on
raw pixels; the export verifies on values; ``infer``, a real ``serve`` process and ``tritonclient`` over v2 give
the same counts for the same 20 files of mixed sizes and modes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from tests.extras.serve.test_serve import start_server
from tests.helpers import CONFIGS, fast_fit_args, run_litstarter

pytestmark = pytest.mark.slow
FILES = 20
#: infer and serve run the same ONNX graph on the same pixels: the same values but for batching (the export verifies
#: against eager with atol 1e-5, rtol 1e-3 on the standardised output; a count's std is about 1.7).
ATOL = 1e-4


@pytest.fixture(scope="module")
def regression_run(tmp_path_factory) -> dict:
    """One fit on the counting canvases and its ONNX export: ``{"run", "export", "files", "counts"}``. Read-only."""
    from litstarter.data.digit_counts import digit_canvases

    work = tmp_path_factory.mktemp("regression")
    configs = [CONFIGS / "data" / "digit_counts.yaml", CONFIGS / "task" / "regression.yaml"]
    run_litstarter([*fast_fit_args(work / "runs", epochs=8, name="counts", configs=configs)], timeout=600)
    run = work / "runs" / "counts" / "version_0"
    export = work / "export"
    run_litstarter(["export", "--ckpt_path", str(run / "checkpoints" / "last.ckpt"), "--out", str(export),
                    "--formats", "onnx"], timeout=300)  # fmt: skip
    images, counts = digit_canvases(FILES, seed=123)  # canvases the fit never saw
    files = []
    for i, image in enumerate(images[:, 0]):
        picture = Image.fromarray(image)
        if i % 3 == 1:  # larger and in colour: infer and serve resize and convert as training did
            picture = picture.resize((80, 80), Image.BILINEAR).convert("RGB")
        elif i % 3 == 2:
            picture = picture.convert("RGBA")
        files.append(work / "files" / f"{i:02d}.png")
        files[-1].parent.mkdir(exist_ok=True)
        picture.save(files[-1])
    return {"run": run, "export": export, "files": files, "counts": counts[:, 0]}


def test_the_network_beats_the_mean_and_ridge_baselines_on_test_mae(regression_run) -> None:
    metrics = json.loads((regression_run["run"] / "metrics.json").read_text())
    network, mean, ridge = (metrics[k] for k in ("test/mae", "test/baseline_mean_mae", "test/baseline_ridge_mae"))
    print(f"test MAE: network {network:.4f}, train mean {mean:.4f}, ridge on raw pixels {ridge:.4f}")
    assert network < ridge < mean, (network, ridge, mean)
    assert {"test/rmse", "test/r2"} <= set(metrics)


def test_export_infer_serve_and_tritonclient_give_the_same_counts(regression_run, tmp_path: Path) -> None:
    triton_http = pytest.importorskip("tritonclient.http")
    from litstarter.extras.deploy.contract import ModelContract

    export, files = regression_run["export"], regression_run["files"]
    report = json.loads((export / "export_report.json").read_text())
    onnx = report["artifacts"]["model.onnx"]
    assert onnx["passed"] and onnx["value_agreement"] == 1.0, onnx
    contract = ModelContract.from_json((export / "model.json").read_text())
    assert contract.task == "regression" and contract.class_names == ["count"]

    out = tmp_path / "counts.csv"
    run_litstarter(["infer", "--model", str(export / "model.onnx"), "--input", *map(str, files), "--output", str(out)])
    with open(out, newline="") as handle:
        inferred = {Path(r["file"]).name: float(r["count"]) for r in csv.DictReader(handle)}
    values = np.array([inferred[f.name] for f in files])
    assert np.abs(values - regression_run["counts"]).mean() < 0.5  # counts, not noise

    server = start_server(export / "model.onnx")
    try:
        served = np.array([post_value(server.url, f) for f in files])
        np.testing.assert_allclose(served, values, atol=ATOL)
        client = triton_http.InferenceServerClient(server.url.removeprefix("http://"), network_timeout=30)
        batch = np.stack([contract.load_image(f) for f in files])  # the contract's NumPy reference preprocessing
        tensor = triton_http.InferInput("input", list(batch.shape), "UINT8")
        tensor.set_data_from_numpy(batch)
        result = client.infer("model", [tensor], outputs=[triton_http.InferRequestedOutput("values")])
        np.testing.assert_allclose(result.as_numpy("values")[:, 0], served, atol=1e-5)
        with pytest.raises(Exception, match="classification ranks classes"):
            client.infer("model", [tensor], outputs=[triton_http.InferRequestedOutput("values", class_count=1)])
    finally:
        assert server.stop() == 0, server.output()


def post_value(url: str, path: Path) -> float:
    """``/predict``'s ``value`` for one file."""
    answer = httpx.post(f"{url}/predict", content=path.read_bytes(), headers={"Content-Type": "image/png"}).json()
    return float(answer["value"])
