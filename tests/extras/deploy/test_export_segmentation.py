"""A segmentation fit's default export exits 0 with its table (anything left out named with why), and the pixel
verification still fails an ONNX graph of a perturbed or a one-activation-short segmenter."""

from __future__ import annotations

import copy
import json

import pytest

from litstarter.extras.deploy.checkpoint import network_from_checkpoint
from litstarter.extras.deploy.contract import ModelContract
from litstarter.extras.deploy.export_data import load_export_data
from litstarter.extras.deploy.export_job import ExportJob
from litstarter.extras.deploy.verify import ArtifactRejected
from litstarter.extras.deploy.writers import write_onnx
from litstarter.models.network import architecture_of
from tests.extras.deploy.test_verify import dropped_activation, perturbed_weight

pytestmark = pytest.mark.slow


def test_the_default_export_of_a_segmentation_fit_succeeds_and_says_what_it_left_out(segmentation_export) -> None:
    assert segmentation_export["code"] == 0, segmentation_export["stderr"][-3000:]
    out, printed = segmentation_export["export"], segmentation_export["stdout"]
    report = json.loads((out / "export_report.json").read_text())
    assert report["passed"] and report["artifacts"]["model.onnx"]["passed"]
    assert (out / "model.onnx").is_file() and (out / "model.json").is_file()
    table = {line.split()[0]: line for line in printed.splitlines() if line.startswith(("model.", "weights."))}
    assert set(table) == set(report["artifacts"])  # every artifact tried has its row
    for name, figures in report["artifacts"].items():
        assert (out / name).is_file() == figures["passed"] == (name not in report["left_out"]), name
        if name in report["left_out"]:
            assert f"left out: {report['left_out'][name]}" in table[name]
    kept = json.loads((out / "model.json").read_text())["artifacts"]
    assert sorted(kept) == sorted(n for n, r in report["artifacts"].items() if r["passed"])


@pytest.mark.parametrize("change", [perturbed_weight, dropped_activation], ids=["weight", "op"])
def test_a_segmenter_graph_of_another_network_fails_verification(segmentation_export, tmp_path, change) -> None:
    run = segmentation_export["run"]
    net, hparams = network_from_checkpoint(run / "checkpoints" / "last.ckpt")
    data = load_export_data(run / "config.yaml", hparams, verify_samples=32, calibration_images=8)
    architecture = architecture_of(hparams)
    contract = ModelContract.from_hparams(hparams, *net.normalization(), data.resize_size, architecture)
    job = ExportJob(net, contract, data, tmp_path)
    path = tmp_path / "model.onnx"
    write_onnx(change(copy.deepcopy(net)), path, contract, job.example)
    with pytest.raises(ArtifactRejected) as rejected:
        job.verify("onnx", path)
    failures = rejected.value.figures["failures"]
    assert any(f.startswith("model.onnx: max |diff|") for f in failures), failures
