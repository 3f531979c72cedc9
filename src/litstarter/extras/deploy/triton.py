"""A Triton Inference Server model repository from a verified ``model.onnx`` (``litstarter export --triton``).

Writes, under ``<repository>/<name>/``::

    config.pbtxt      platform onnxruntime_onnx, max_batch_size, inputs and outputs, dynamic batching
    1/model.onnx      the verified ONNX file, unchanged (version 1)
    labels.txt        the class names, one per line in logit order (the output's label_filename)

The names, datatypes and dims come from the ONNX graph itself (read with ``onnx``, nothing run); the labels
from the model's contract. With ``max_batch_size > 0`` Triton's ``dims`` leave out the batch dimension, so
the graph's first dimension must be its dynamic batch (``litstarter export`` makes it so). Triton's classification
extension (``InferRequestedOutput("logits", class_count=k)``) then answers ``"<logit>:<index>:<label>"``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from litstarter.extras.deploy.contract import ModelContract
from litstarter.extras.deploy.export_data import ExportError

#: ONNX element type name -> Triton's ``data_type``.
TRITON_TYPES = {
    "FLOAT": "TYPE_FP32",
    "FLOAT16": "TYPE_FP16",
    "DOUBLE": "TYPE_FP64",
    "UINT8": "TYPE_UINT8",
    "INT8": "TYPE_INT8",
    "INT32": "TYPE_INT32",
    "INT64": "TYPE_INT64",
    "BOOL": "TYPE_BOOL",
}
LABELS_NAME = "labels.txt"
#: Dynamic batching waits at most this long for a batch to fill: a starting point to tune with perf_analyzer.
QUEUE_DELAY_MICROSECONDS = 1000


@dataclass(frozen=True)
class GraphTensor:
    """One graph input or output: its name, Triton datatype and dims without the batch dimension (-1: dynamic)."""

    name: str
    data_type: str
    dims: list[int]


def graph_tensors(onnx_path: Path) -> tuple[list[GraphTensor], list[GraphTensor]]:
    """The graph's inputs and outputs, their batch dimension (the first, dynamic) left out.

    Raises:
        ExportError: For an element type Triton has no name for here, or a graph without a dynamic batch dimension.
    """
    import onnx

    graph = onnx.load(str(onnx_path), load_external_data=False).graph
    initializers = {init.name for init in graph.initializer}

    def tensors(values) -> list[GraphTensor]:
        found = []
        for value in values:
            if value.name in initializers:
                continue
            kind = onnx.TensorProto.DataType.Name(value.type.tensor_type.elem_type)
            dims = value.type.tensor_type.shape.dim
            if kind not in TRITON_TYPES:
                raise ExportError(f"{onnx_path}: {value.name!r} is {kind}, which this writer has no Triton type for")
            if not dims or dims[0].HasField("dim_value"):
                raise ExportError(f"{onnx_path}: {value.name!r} has no dynamic batch dimension first; re-export it")
            found.append(GraphTensor(value.name, TRITON_TYPES[kind], [d.dim_value or -1 for d in dims[1:]]))
        return found

    return tensors(graph.input), tensors(graph.output)


def _tensor_text(tensor: GraphTensor, labels: bool = False) -> str:
    label = f'\n    label_filename: "{LABELS_NAME}"' if labels else ""
    dims = ", ".join(map(str, tensor.dims))
    return f'  {{\n    name: "{tensor.name}"\n    data_type: {tensor.data_type}\n    dims: [ {dims} ]{label}\n  }}'


def config_text(name: str, inputs: list[GraphTensor], outputs: list[GraphTensor], max_batch_size: int) -> str:
    """``config.pbtxt`` in protobuf text format (Triton's ``ModelConfig``); every output gets the labels file."""
    listed_inputs = ",\n".join(_tensor_text(t) for t in inputs)
    listed_outputs = ",\n".join(_tensor_text(t, labels=True) for t in outputs)
    return (
        f'name: "{name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: {max_batch_size}\n'
        f"input [\n{listed_inputs}\n]\noutput [\n{listed_outputs}\n]\n"
        f"dynamic_batching {{\n  preferred_batch_size: [ {max_batch_size} ]\n"
        f"  max_queue_delay_microseconds: {QUEUE_DELAY_MICROSECONDS}\n}}\n"
    )


def write_triton_repository(
    onnx_path: Path, contract: ModelContract, repository: Path, name: str = "model", max_batch_size: int = 32
) -> Path:
    """Write ``<repository>/<name>/`` (config, ``1/model.onnx``, labels) for ``onnx_path``; returns that folder.

    Args:
        onnx_path: A verified ONNX model with a dynamic batch dimension.
        contract: Its contract (the class names become ``labels.txt``).
        repository: The model repository folder (``tritonserver --model-repository``).
        name: The model's name in Triton (its folder).
        max_batch_size: Triton's ``max_batch_size``, and the preferred batch of dynamic batching.

    Raises:
        ExportError: If the graph cannot be described to Triton (see :func:`graph_tensors`).
    """
    if max_batch_size < 1:
        raise ExportError(f"--triton_max_batch_size must be >= 1, got {max_batch_size}")
    inputs, outputs = graph_tensors(onnx_path)
    folder = repository / name
    (folder / "1").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(onnx_path, folder / "1" / "model.onnx")
    (folder / LABELS_NAME).write_text("".join(f"{label}\n" for label in contract.class_names))
    (folder / "config.pbtxt").write_text(config_text(name, inputs, outputs, max_batch_size))
    return folder
