"""A default export (no --formats) leaves out an optional artifact that falls short, says why in its table and exits
0 with model.onnx written, which infer and serve then use; the same format named in --formats exits 1. A file that
is no Lightning checkpoint is refused in one line naming it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import torch

from litstarter.extras.deploy import export, export_job
from litstarter.extras.deploy.checkpoint import network_from_checkpoint
from litstarter.extras.deploy.contract import SIDECAR_NAME
from litstarter.extras.deploy.writers import write_onnx

FAST = ["--verify_samples", "128", "--calibration_images", "64"]


@pytest.fixture
def int8_falls_short(digits_export, tmp_path, monkeypatch) -> None:
    """INT8 quantized from another network (class 3's bias 5 higher): its accuracy falls far below eager's."""
    real_quantize = export_job.quantize_int8
    wrong, _ = network_from_checkpoint(digits_export.ckpt)
    with torch.no_grad():
        wrong.head.bias[3] += 5.0

    def quantize_another_network(fp32_path, out_path, calibration, contract):
        other = tmp_path / "other.onnx"
        write_onnx(wrong, other, contract, torch.zeros(2, 1, 8, 8, dtype=torch.uint8))
        return real_quantize(other, out_path, calibration, contract)

    monkeypatch.setattr(export_job, "quantize_int8", quantize_another_network)


def test_a_default_export_leaves_out_what_falls_short_and_succeeds(
    digits_export, digit_files, int8_falls_short, tmp_path, capsys
) -> None:
    out = tmp_path / "export"
    assert export.main(["--ckpt_path", str(digits_export.ckpt), "--out", str(out), *FAST]) == 0  # main: 1
    printed = capsys.readouterr()
    (row,) = [line for line in printed.out.splitlines() if line.startswith("model.int8.onnx")]
    assert "left out: accuracy" in row and "points below eager" in row and "(allowed: 1.00)" in row
    assert "left out model.int8.onnx (why: in the table); name int8 in --formats to require it" in printed.out
    assert "rejected" not in printed.err
    assert not (out / "model.int8.onnx").exists()
    report = json.loads((out / export.REPORT_NAME).read_text())
    assert report["passed"] and list(report["left_out"]) == ["model.int8.onnx"]
    assert report["artifacts"]["model.int8.onnx"]["passed"] is False  # its figures stay in the report
    artifacts = json.loads((out / SIDECAR_NAME).read_text())["artifacts"]
    assert sorted(artifacts) == ["model.onnx", "model.pt2", "model.ts", "weights.pt"]  # never the left-out one
    # infer and serve run on what was written.
    from litstarter.extras.deploy import infer

    folder, files, _ = digit_files
    csv = tmp_path / "preds.csv"
    assert infer.main(["--model", str(out / "model.onnx"), "--input", str(folder), "--output", str(csv)]) == 0
    assert len(csv.read_text().splitlines()) == 1 + len(files)
    served = serve_once(out / "model.onnx", files[0].read_bytes())
    assert served["predict"].status_code == 200 and "pred" in json.dumps(served["predict"].json())
    assert "model.onnx: passed" in served["info"]["model"]["verification"]["line"]


def serve_once(model: Path, image: bytes) -> dict:
    """``serve``'s app in this process on ``model``: one ``POST /predict`` of ``image`` and ``GET /info``."""
    pytest.importorskip("httpx")
    from starlette.testclient import TestClient

    from litstarter.extras.serve.app import create_app
    from litstarter.extras.serve.command import load_backends
    from litstarter.extras.serve.options import ServeOptions

    ready = threading.Event()
    app = create_app(lambda: load_backends(str(model), 1, 1), ServeOptions(), "model", on_ready=ready.set)
    with TestClient(app) as client:
        assert ready.wait(60)
        time.sleep(0.05)
        predict = client.post("/predict", content=image, headers={"Content-Type": "image/png"})
        return {"predict": predict, "info": client.get("/info").json()}


def test_a_format_named_in_formats_that_falls_short_exits_1(digits_export, int8_falls_short, tmp_path, capsys):
    out = tmp_path / "export"
    args = ["--ckpt_path", str(digits_export.ckpt), "--out", str(out), "--formats", "onnx", "int8", *FAST]
    assert export.main(args) == 1
    printed = capsys.readouterr()
    assert "litstarter export: rejected model.int8.onnx: accuracy" in printed.err
    assert "left out" not in printed.out
    report = json.loads((out / export.REPORT_NAME).read_text())
    assert report["passed"] is False and report["left_out"] == {}
    assert sorted(json.loads((out / SIDECAR_NAME).read_text())["artifacts"]) == ["model.onnx"]


def test_the_default_export_of_a_short_fit_has_nothing_left_out(digits_export) -> None:
    assert digits_export.rc == 0, digits_export.stderr
    report = json.loads((digits_export.out / export.REPORT_NAME).read_text())
    assert report["left_out"] == {} and report["passed"]
    assert "left out" not in digits_export.stdout


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("model.pt2", "a torch.export program (as export's model.pt2)"),
        ("model.ts", "a TorchScript program (as export's model.ts)"),
        ("model.onnx", "an ONNX graph (as export's model.onnx)"),
        ("weights.pt", "a state dict (weights alone, as export's weights.pt)"),
        ("model.json", "JSON text"),
        ("notes.ckpt", "a text file"),
        ("empty.ckpt", "an empty file"),
    ],
)
def test_a_file_that_is_no_checkpoint_is_refused_in_one_line(digits_export, tmp_path, capsys, name, what) -> None:
    source = digits_export.out / name
    path = tmp_path / name
    path.write_bytes(source.read_bytes() if source.exists() else b"my notes" if name == "notes.ckpt" else b"")
    assert export.main(["--ckpt_path", str(path), "--out", str(tmp_path / "x")]) == 2  # main: 1, torch's text
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"litstarter export: error: {path} is not a Lightning checkpoint: it is {what}")
    assert err.rstrip().endswith("expected a .ckpt that `litstarter fit` saved (<run>/checkpoints/*.ckpt)")
    assert not (tmp_path / "x").exists()
