"""timm backbones downstream of a fit: every export format verified for two families (their checkpoints rebuilt in
a fresh process), ``model.json`` carrying a pretrained backbone's normalisation, and ``infer`` on mixed-size photos
giving the eager checkpoint's probabilities from the ONNX export. One export per family (``timm_exports``)."""

from __future__ import annotations

import csv
import json

import pytest

from litstarter.extras.deploy.export_folder import FORMATS, REPORT_NAME

pytestmark = pytest.mark.slow  # end to end
timm = pytest.importorskip("timm")


@pytest.mark.parametrize("family", ["resnet", "mobilenetv3"])
def test_each_family_exports_to_every_format_each_verified(timm_exports, family: str) -> None:
    export = timm_exports[family]
    assert export["code"] == 0, export["stdout"][-3000:] + export["stderr"][-3000:]
    report = json.loads((export["out"] / REPORT_NAME).read_text())
    artifacts = report["artifacts"]
    assert set(artifacts) == {name for name, _ in FORMATS.values()}, artifacts.keys()
    for name, figures in artifacts.items():
        assert figures["passed"], (name, figures)
        assert (export["out"] / name).is_file()


def test_model_json_carries_the_pretrained_backbones_normalisation(timm_exports) -> None:
    contract = json.loads((timm_exports["convnext"]["out"] / "model.json").read_text())
    config = timm.data.resolve_model_data_config(timm.create_model("convnext_atto"))
    assert contract["normalization"]["mean"] == pytest.approx(list(config["mean"]), abs=1e-6)
    assert contract["normalization"]["std"] == pytest.approx(list(config["std"]), abs=1e-6)
    assert contract["architecture"]["backbone"] == "timm/convnext_atto"
    assert contract["preprocessing"]["image_size"] == [64, 64]
    # its resize too: the filter, and the crop fraction as the size stored before the centre crop
    assert contract["preprocessing"]["resize"]["interpolation"] == config["interpolation"] == "bicubic"
    assert contract["preprocessing"]["resize_size"] == [int(64 / config["crop_pct"])] * 2


def test_infer_on_mixed_size_photos_matches_the_eager_checkpoint(timm_exports) -> None:
    """ConvNeXt's ONNX through infer (its bicubic resize to 64 / crop_pct, then the centre crop) gives what its
    checkpoint gives eagerly, on grey, RGBA and odd-sized files."""
    rows = {}
    for kind, path in timm_exports["infer"].items():
        with open(path, newline="") as f:
            rows[kind] = {row["file"]: row for row in csv.DictReader(f)}
    assert len(rows["ckpt"]) == 10 and rows["ckpt"].keys() == rows["onnx"].keys()
    for name, eager in rows["ckpt"].items():
        onnx = rows["onnx"][name]
        assert onnx["top1"] == eager["top1"], name
        assert float(onnx["top1_prob"]) == pytest.approx(float(eager["top1_prob"]), abs=1e-4)
