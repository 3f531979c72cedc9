"""fp32 verification: the task's answers plus logits within atol + rtol x the image's largest |logit|, so that a
faithful graph passes (a near-zero logit off by float32 rounding included) and a wrong one fails (a perturbed weight,
a dropped activation: real ONNX graphs of the digits run); INT8's score drop is judged inclusively, as printed."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from litstarter.extras.deploy.checkpoint import network_from_checkpoint
from litstarter.extras.deploy.contract import ModelContract
from litstarter.extras.deploy.export_data import load_export_data
from litstarter.extras.deploy.export_job import ExportJob
from litstarter.extras.deploy.verify import ArtifactRejected, Tolerances, compare
from litstarter.extras.deploy.writers import write_onnx
from litstarter.models.network import architecture_of
from litstarter.tasks.classification_answers import ClassificationAnswers
from litstarter.tasks.segmentation_answers import SegmentationAnswers
from tests.helpers import best_checkpoint


def segmentation_logits(seed: int = 0) -> np.ndarray:
    """``(4, 11, 48, 48)`` logits as a trained segmenter's: up to about 25, many near zero."""
    rng = np.random.default_rng(seed)
    return (rng.normal(0, 8, (4, 11, 48, 48)) * rng.random((4, 11, 1, 1))).astype(np.float32)


def test_a_faithful_segmentation_graph_passes_though_a_logit_near_zero_is_off_by_1e_4() -> None:
    """main rejected this: 1.06e-4 at a logit of 1e-3 is outside an elementwise rtol 1e-3 / atol 1e-5, with every
    pixel's class the same."""
    answers = SegmentationAnswers([str(i) for i in range(11)], {"ignore_index": 255})
    eager = segmentation_logits()
    eager[0, 3, 10, 10] = 1e-3
    exported = eager.copy()
    exported[0, 3, 10, 10] += 1.06e-4
    targets = eager.argmax(axis=1)
    figures = compare("model.onnx", {32: exported}, {32: eager}, targets, False, Tolerances(), answers)
    assert figures["passed"], figures["failures"]
    assert figures["pixel_agreement"] == 1.0 and figures["max_abs_diff"] == pytest.approx(1.06e-4, rel=1e-2)


def test_logits_off_by_more_than_the_scaled_bound_fail_even_when_every_answer_agrees() -> None:
    answers = SegmentationAnswers([str(i) for i in range(11)], {"ignore_index": 255})
    eager = segmentation_logits()
    largest = np.abs(eager[1]).max()
    exported = eager.copy()
    exported[1] += 2e-3 * largest  # twice the bound, on every logit of one image: no pixel changes class
    figures = compare("model.onnx", {32: exported}, {32: eager}, eager.argmax(axis=1), False, Tolerances(), answers)
    assert figures["pixel_agreement"] == 1.0 and not figures["passed"]
    (failure,) = figures["failures"]
    assert failure.startswith("model.onnx: max |diff|") and "rtol 0.001 x the image's largest |logit|" in failure


def classified(right: int, total: int = 299) -> np.ndarray:
    """``(total, 3)`` logits whose top-1 is class 0 for the first ``right`` images, class 1 for the rest."""
    logits = np.zeros((total, 3), dtype=np.float32)
    logits[:right, 0] = logits[right:, 1] = 5.0
    return logits


@pytest.mark.parametrize(("fewer", "passed"), [(3, True), (4, False)])
def test_int8_drop_is_judged_inclusively_at_the_printed_precision(fewer: int, passed: bool) -> None:
    """3 of 299 images is a drop of 1.0033 points, printed "1.00 points below eager (allowed: 1.00)", which main
    rejected; 4 (1.34 points) stays rejected."""
    answers = ClassificationAnswers(["a", "b", "c"])
    targets = np.zeros(299, dtype=np.int64)
    eager, int8 = classified(290), classified(290 - fewer)
    figures = compare("model.int8.onnx", {32: int8}, {32: eager}, targets, True, Tolerances(), answers)
    assert figures["passed"] is passed, figures["failures"]
    if not passed:
        assert figures["failures"] == [
            "model.int8.onnx: accuracy 0.9565 is 1.34 points below eager 0.9699 (allowed: 1.00)"
        ]


@pytest.fixture(scope="module")
def digits_job(digits_run, tmp_path_factory) -> ExportJob:
    """An export job of the digits run's best checkpoint, verifying on 128 test images."""
    net, hparams = network_from_checkpoint(best_checkpoint(digits_run))
    data = load_export_data(digits_run / "config.yaml", hparams, verify_samples=128, calibration_images=8)
    architecture = architecture_of(hparams)
    contract = ModelContract.from_hparams(hparams, *net.normalization(), data.resize_size, architecture)
    return ExportJob(net, contract, data, tmp_path_factory.mktemp("verify_staging"))


def perturbed_weight(net: torch.nn.Module) -> torch.nn.Module:
    """The last convolution's weights 1% larger."""
    conv = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)][-1]
    with torch.no_grad():
        conv.weight.mul_(1.01)
    return net


def dropped_activation(net: torch.nn.Module) -> torch.nn.Module:
    """The last ReLU replaced by the identity: a graph with one operation left out."""
    name = [n for n, m in net.named_modules() if isinstance(m, torch.nn.ReLU)][-1]
    parent, _, child = name.rpartition(".")
    setattr(net.get_submodule(parent), child, torch.nn.Identity())
    return net


@pytest.mark.parametrize("change", [None, perturbed_weight, dropped_activation], ids=["faithful", "weight", "op"])
def test_an_onnx_graph_of_another_network_fails_verification(digits_job: ExportJob, tmp_path, change) -> None:
    net = copy.deepcopy(digits_job.net) if change is None else change(copy.deepcopy(digits_job.net))
    path = tmp_path / "model.onnx"
    write_onnx(net, path, digits_job.contract, digits_job.example)
    if change is None:
        assert digits_job.verify("onnx", path)["passed"]
        return
    with pytest.raises(ArtifactRejected) as rejected:
        digits_job.verify("onnx", path)
    figures = rejected.value.figures
    assert any(f.startswith("model.onnx: max |diff|") for f in figures["failures"]), figures["failures"]
    bound = 1e-5 + 1e-3 * np.abs(digits_job.reference[32]).max()
    assert figures["max_abs_diff"] > 5 * bound  # far outside, not at the edge
