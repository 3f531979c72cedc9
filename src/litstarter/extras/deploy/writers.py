"""One writer per export format: the network -> a file, with the model contract embedded where the format allows."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import torch

from litstarter.extras.deploy.backends import torchscript_quietly
from litstarter.extras.deploy.contract import EMBEDDED_KEY, ModelContract
from litstarter.models import Classifier


def _batch_dim() -> dict:
    return {0: torch.export.Dim("batch", min=1)}


def write_weights(net: Classifier, path: Path, contract: ModelContract, example: torch.Tensor) -> dict:
    """``weights.pt``: the state_dict only (loads with ``torch.load(..., weights_only=True)``)."""
    torch.save(net.state_dict(), path)
    return {"format": "state_dict", "loads_with": "torch.load(path, weights_only=True)"}


def write_torchscript(net: Classifier, path: Path, contract: ModelContract, example: torch.Tensor) -> dict:
    """``model.ts``: TorchScript by tracing (deprecated since torch 2.10; one warning per process)."""
    with torchscript_quietly(), torch.no_grad():
        traced = torch.jit.trace(net, example)
        torch.jit.save(traced, str(path), _extra_files={EMBEDDED_KEY: contract.to_json()})
    return {"format": "torchscript", "method": "trace", "deprecated_since": "torch 2.10"}


def write_exported(net: Classifier, path: Path, contract: ModelContract, example: torch.Tensor) -> dict:
    """``model.pt2``: ``torch.export`` with a dynamic batch dimension."""
    program = torch.export.export(net, (example,), dynamic_shapes=(_batch_dim(),))
    buffer = io.BytesIO()  # torch.export.save insists on a ".pt2" name; we write a temporary one
    torch.export.save(program, buffer, extra_files={EMBEDDED_KEY: contract.to_json()})
    path.write_bytes(buffer.getvalue())
    return {"format": "torch.export", "dynamic_batch": True}


def write_onnx(net: Classifier, path: Path, contract: ModelContract, example: torch.Tensor, opset: int = 18) -> dict:
    """``model.onnx``: the dynamo-based exporter, dynamic batch, input ``input`` / output ``logits``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=DeprecationWarning)
        program = torch.onnx.export(
            net,
            (example,),
            dynamo=True,
            input_names=[contract.input_name],
            output_names=[contract.output_name],
            dynamic_shapes=(_batch_dim(),),
            opset_version=opset,
            verbose=False,
        )
    program.model.metadata_props[EMBEDDED_KEY] = contract.to_json()
    program.save(str(path))
    return {"format": "onnx", "opset": opset, "dynamic_batch": True}
