"""A multi-label model exported, then through ``infer`` and a real ``serve`` process: the same label sets and
probabilities as the eager checkpoint, for the same 20 files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch

from tests.extras.serve.test_serve import start_server

pytestmark = pytest.mark.slow
FILES = 20
#: The export's own float tolerance (litstarter.extras.deploy.verify) is on logits; probabilities are tighter.
ATOL = 1e-4


def test_eager_onnx_infer_and_serve_agree_on_label_sets_and_probabilities(multilabel_runs, tmp_path: Path) -> None:
    from litstarter.extras.deploy.checkpoint import network_from_checkpoint
    from litstarter.extras.deploy.contract import ModelContract
    from litstarter.extras.deploy.export import main as export
    from litstarter.extras.deploy.infer import main as infer

    run = multilabel_runs["labels"]
    (ckpt,) = [p for p in (run / "checkpoints").glob("*.ckpt") if p.name != "last.ckpt"]
    out = tmp_path / "export"
    assert export(["--ckpt_path", str(ckpt), "--out", str(out), "--formats", "onnx", "int8"]) in (0, 1)
    report = json.loads((out / "export_report.json").read_text())
    # Verified on the task's own terms: the same label sets at the thresholds, and INT8 on the drop in mAP
    assert (report["verification"]["agreement"], report["verification"]["score"]) == (
        "label_set_agreement",
        "map_macro",
    )
    assert (
        report["artifacts"]["model.onnx"]["label_set_agreement"] == 1.0 and report["artifacts"]["model.onnx"]["passed"]
    )
    int8 = report["artifacts"]["model.int8.onnx"]
    assert int8["passed"] == (round(100 * int8["map_macro_drop"], 2) <= 1.0), int8  # inclusive, as printed
    assert int8["map_macro"] == pytest.approx(report["eager"]["map_macro"] - int8["map_macro_drop"])
    contract = ModelContract.from_json((out / "model.json").read_text())
    assert contract.task == "multilabel" and len(contract.thresholds) == 10
    files = sorted((multilabel_runs["root"] / "images").glob("*.png"))[:FILES]

    net, _ = network_from_checkpoint(ckpt)
    with torch.no_grad():
        eager = net(torch.from_numpy(np.stack([contract.load_image(f) for f in files]))).sigmoid().double().numpy()
    eager_labels = [
        [n for n, p, t in zip(contract.class_names, row, contract.thresholds, strict=True) if p >= t] for row in eager
    ]

    assert (
        infer(["--model", str(out / "model.onnx"), "--input", *map(str, files), "--output", str(tmp_path / "p.csv")])
        == 0
    )
    with open(tmp_path / "p.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [Path(r["file"]).name for r in rows] == [f.name for f in files]
    inferred = np.array([[float(r[f"prob_{n}"]) for n in contract.class_names] for r in rows])
    np.testing.assert_allclose(inferred, eager, atol=ATOL)

    server = start_server(out / "model.onnx")
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            png = {"Content-Type": "image/png"}
            answers = [client.post("/predict", content=f.read_bytes(), headers=png).json() for f in files]
        served = np.array([[a["probabilities"][n] for n in contract.class_names] for a in answers])
        check_the_v2_route_gives_the_same_probabilities(server, contract, files, served)
    finally:
        assert server.stop() == 0, server.output()
    np.testing.assert_allclose(served, eager, atol=ATOL)
    near = np.abs(eager - np.array(contract.thresholds)).min(axis=1) < ATOL  # a probability on its threshold may flip
    for i in np.flatnonzero(~near):
        assert (rows[i]["labels"].split(";") if rows[i]["labels"] else []) == eager_labels[i]
        assert answers[i]["labels"] == eager_labels[i]
    assert sum(len(labels) for labels in eager_labels) > 0


def check_the_v2_route_gives_the_same_probabilities(server, contract, files, served: np.ndarray) -> None:
    """tritonclient over the Open Inference Protocol, sent the contract's NumPy reference preprocessing of each
    file: its ``probabilities`` are ``/predict``'s sigmoids (not a softmax), and Triton's classification ranks the
    labels by them."""
    triton_http = pytest.importorskip("tritonclient.http")

    client = triton_http.InferenceServerClient(server.url.removeprefix("http://"), network_timeout=30)
    batch = np.stack([contract.load_image(f) for f in files])  # (20, C, H, W) uint8
    tensor = triton_http.InferInput("input", list(batch.shape), "UINT8")
    tensor.set_data_from_numpy(batch)
    wanted = [
        triton_http.InferRequestedOutput("probabilities"),
        triton_http.InferRequestedOutput("logits", class_count=3),
    ]
    result = client.infer("model", [tensor], outputs=wanted)
    np.testing.assert_allclose(result.as_numpy("probabilities"), served, atol=1e-6)
    ranked = client.infer(
        "model", [tensor], outputs=[triton_http.InferRequestedOutput("probabilities", class_count=3)]
    ).as_numpy("probabilities")
    for row, probs in zip(ranked, served, strict=True):
        got = [entry.decode().split(":") for entry in row]  # "<value>:<index>:<label>", best first
        assert [float(v) for v, _, _ in got] == pytest.approx(sorted(probs, reverse=True)[:3], abs=1e-6)
        assert [contract.class_names[int(i)] for _, i, _ in got] == [label for _, _, label in got]
        assert all(probs[int(i)] == pytest.approx(float(v), abs=1e-6) for v, i, _ in got)
