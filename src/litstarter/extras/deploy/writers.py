"""One writer per export format: the network -> a file, with the model contract embedded where the format allows."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import torch

from litstarter.extras.deploy.backends import torchscript_quietly
from litstarter.extras.deploy.contract import EMBEDDED_KEY, ModelContract
from litstarter.models.network import ImageNetwork


def _batch_dim() -> dict:
    return {0: torch.export.Dim("batch", min=1)}


def write_weights(net: ImageNetwork, path: Path, contract: ModelContract, example: torch.Tensor) -> dict:
    """``weights.pt``: the state_dict only (loads with ``torch.load(..., weights_only=True)``)."""
    torch.save(net.state_dict(), path)
    return {"format": "state_dict", "loads_with": "torch.load(path, weights_only=True)"}


class PerImage(torch.nn.Module):
    """A network traced on one image, run on each image of a batch in turn (a scripted loop): how a network whose
    output per image depends on the data (``export_per_image``, a detector's NMS) exports with a dynamic batch.

    Args:
        one: The network traced at a batch of one.
    """

    def __init__(self, one: torch.nn.Module) -> None:
        super().__init__()
        self.one = one

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, ...)`` images -> the traced network's outputs, concatenated along the batch."""
        return torch.cat([self.one(x[i : i + 1]) for i in range(x.shape[0])])


def _traced(net: ImageNetwork, example: torch.Tensor):
    """``net`` traced on ``example`` (or, for an ``export_per_image`` network, on its first image, in a scripted
    :class:`PerImage` loop); the TorchScript method's name for the report."""
    with torchscript_quietly(), torch.no_grad(), warnings.catch_warnings():
        if not getattr(net, "export_per_image", False):
            return torch.jit.trace(net, example), "trace"
        # Tracing records the data-dependent sizes (NMS's survivors, the padding) as operations: the graph stays
        # true for every image, which check_trace would compare against one other input only.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        one = torch.jit.trace(net, example[:1], check_trace=False)
        return torch.jit.script(PerImage(one)), "trace per image"


def write_torchscript(net: ImageNetwork, path: Path, contract: ModelContract, example: torch.Tensor) -> dict:
    """``model.ts``: TorchScript by tracing (deprecated since torch 2.10; one warning per process)."""
    traced, method = _traced(net, example)
    with torchscript_quietly():
        torch.jit.save(traced, str(path), _extra_files={EMBEDDED_KEY: contract.to_json()})
    return {"format": "torchscript", "method": method, "deprecated_since": "torch 2.10"}


def write_exported(net: ImageNetwork, path: Path, contract: ModelContract, example: torch.Tensor) -> dict:
    """``model.pt2``: ``torch.export`` with a dynamic batch dimension."""
    program = torch.export.export(net, (example,), dynamic_shapes=(_batch_dim(),))
    buffer = io.BytesIO()  # torch.export.save insists on a ".pt2" name; we write a temporary one
    torch.export.save(program, buffer, extra_files={EMBEDDED_KEY: contract.to_json()})
    path.write_bytes(buffer.getvalue())
    return {"format": "torch.export", "dynamic_batch": True}


def write_onnx(net: ImageNetwork, path: Path, contract: ModelContract, example: torch.Tensor, opset: int = 18) -> dict:
    """``model.onnx``: the dynamo-based exporter, dynamic batch, input ``input`` / output ``logits``; for an
    ``export_per_image`` network, the TorchScript-based exporter on its per-image loop (an ONNX ``Loop``)."""
    if getattr(net, "export_per_image", False):
        return _write_onnx_per_image(net, path, contract, example, opset)
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


def _write_onnx_per_image(
    net: ImageNetwork, path: Path, contract: ModelContract, example: torch.Tensor, opset: int
) -> dict:
    """The traced per-image loop through ``torch.onnx.export(dynamo=False)``: the dynamo-based exporter cannot
    capture a data-dependent output size (NMS), the TorchScript-based one records it as operations."""
    import onnx

    looped, _ = _traced(net, example)
    names = {"input_names": [contract.input_name], "output_names": [contract.output_name]}
    axes = {contract.input_name: {0: "batch"}, contract.output_name: {0: "batch"}}
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation and tracer notes, on a graph we verify
        torch.onnx.export(looped, (example,), buffer, dynamo=False, opset_version=opset, dynamic_axes=axes, **names)
    model = onnx.load_from_string(buffer.getvalue())
    onnx.helper.set_model_props(model, {EMBEDDED_KEY: contract.to_json()})
    onnx.save(model, str(path))
    return {"format": "onnx", "opset": opset, "dynamic_batch": True, "exporter": "torchscript, per image"}
