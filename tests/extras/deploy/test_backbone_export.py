"""Every registered backbone exports to ONNX with a dynamic batch and predicts there what it predicts in eager
PyTorch (torch.export decompositions make this slow for the larger ones)."""

from __future__ import annotations

import gc
import io
import warnings

import numpy as np
import pytest
import torch

from litstarter.models import Classifier, create_backbone, list_backbones

pytestmark = pytest.mark.slow  # end to end

SIZE = 32  # the smallest input every family accepts (five stride-2 stages leave 1x1)
BATCH = 2


@pytest.mark.parametrize("name", list_backbones())
def test_backbone_exports_to_onnx_with_dynamic_batch(name: str) -> None:
    import onnxruntime as ort

    torch.manual_seed(0)
    net = Classifier(create_backbone(name, in_channels=1), num_classes=3, mean=[0.5], std=[0.25]).eval()
    example = torch.randint(0, 256, (BATCH, 1, SIZE, SIZE)).float()
    batch = torch.export.Dim("batch", min=1, max=64)
    with warnings.catch_warnings(), io.StringIO():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(net, (example,), dynamo=True, dynamic_shapes=({0: batch},), verbose=False)
    session = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    assert isinstance(session.get_inputs()[0].shape[0], str), "the batch dimension must be symbolic"
    images = torch.randint(0, 256, (3, 1, SIZE, SIZE)).float()  # another batch size than the traced one
    (onnx_logits,) = session.run(None, {session.get_inputs()[0].name: images.numpy()})
    with torch.no_grad():
        eager = net(images).numpy()
    scale = np.abs(eager).max()
    assert onnx_logits.shape == (3, 3) and scale > 0
    assert np.abs(onnx_logits - eager).max() <= 1e-4 * scale
    del program, session, net
    gc.collect()  # the exported program holds reference cycles; free it before the next backbone


def test_standardized_small_cnn_exports_to_onnx_and_torchscript_with_the_same_predictions() -> None:
    """Photo-sized inputs switch small_cnn's per-image standardisation on: both formats carry it."""
    import onnxruntime as ort

    torch.manual_seed(0)
    backbone = create_backbone("small_cnn", in_channels=3, image_size=(64, 64))
    assert backbone.standardize
    net = Classifier(backbone, num_classes=3, mean=[0.5] * 3, std=[0.25] * 3).eval()
    example = torch.randint(0, 256, (BATCH, 3, 64, 64)).float()
    batch = torch.export.Dim("batch", min=1, max=64)
    with warnings.catch_warnings(), io.StringIO():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(net, (example,), dynamo=True, dynamic_shapes=({0: batch},), verbose=False)
        traced = torch.jit.trace(net, example)
    session = ort.InferenceSession(program.model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    images = torch.randint(0, 256, (3, 3, 64, 64)).float()
    (onnx_logits,) = session.run(None, {session.get_inputs()[0].name: images.numpy()})
    with torch.no_grad():
        eager, scripted = net(images).numpy(), traced(images).numpy()
    scale = np.abs(eager).max()
    assert scale > 0
    assert np.abs(onnx_logits - eager).max() <= 1e-4 * scale
    assert np.abs(scripted - eager).max() <= 1e-5 * scale
