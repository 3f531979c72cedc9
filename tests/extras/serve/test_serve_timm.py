"""timm backbones served: each family's ONNX export (the shared ``timm_exports``) answers ``/predict`` with what
``infer`` predicts for the same digit files."""

from __future__ import annotations

import csv

import httpx
import pytest

from litstarter.extras.deploy import infer
from tests.extras.serve.test_serve import assert_same_as_infer, post_file, start_server

pytestmark = pytest.mark.slow
pytest.importorskip("timm")


@pytest.mark.parametrize("family", ["resnet", "mobilenetv3"])
def test_each_family_serves_what_infer_predicts(timm_exports, digit_files, tmp_path, family: str) -> None:
    model = timm_exports[family]["out"] / "model.onnx"
    folder, files, _ = digit_files
    output = tmp_path / "preds.csv"
    assert infer.main(["--model", str(model), "--input", str(folder), "--output", str(output), "--topk", "3"]) == 0
    with open(output, newline="") as f:
        rows = {row["file"].rsplit("/", 1)[-1]: row for row in csv.DictReader(f)}
    server = start_server(model)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            assert client.get("/info").json()["model"]["input_size"] == [8, 8]
            for path in files[:8]:
                assert_same_as_infer(post_file(client, path, as_json=False), rows[path.name])
    finally:
        assert server.stop() == 0, server.output()
