"""``litstarter export --triton``: a Triton model repository that Triton's config schema reads, its dims the graph's."""

from __future__ import annotations

import onnx
import pytest

from litstarter.extras.deploy.export import main
from tests.helpers import best_checkpoint

pytestmark = pytest.mark.slow


def test_triton_repository_parses_with_tritons_schema_and_matches_the_graph(digits_run, tmp_path, capsys):
    model_config_pb2 = pytest.importorskip("tritonclient.grpc.model_config_pb2")
    text_format = pytest.importorskip("google.protobuf.text_format")
    out = tmp_path / "export"
    args = ["--ckpt_path", str(best_checkpoint(digits_run)), "--out", str(out), "--formats", "onnx"]
    assert main([*args, "--triton", "--triton_max_batch_size", "16", "--verify_samples", "64"]) == 0
    assert ", triton/model/, model.json" in capsys.readouterr().out
    folder = out / "triton" / "model"
    config = text_format.Parse((folder / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())
    assert config.name == "model" and config.platform == "onnxruntime_onnx" and config.max_batch_size == 16
    assert list(config.dynamic_batching.preferred_batch_size) == [16]
    assert config.dynamic_batching.max_queue_delay_microseconds > 0

    assert (folder / "1" / "model.onnx").read_bytes() == (out / "model.onnx").read_bytes()
    graph = onnx.load(str(folder / "1" / "model.onnx")).graph
    types = {"TYPE_UINT8": onnx.TensorProto.UINT8, "TYPE_FP32": onnx.TensorProto.FLOAT}
    for ours, theirs in [(config.input, graph.input), (config.output, graph.output)]:
        assert [t.name for t in ours] == [t.name for t in theirs]
        for tensor, value in zip(ours, theirs, strict=True):
            dims = value.type.tensor_type.shape.dim
            assert dims[0].dim_param and not dims[0].dim_value  # the batch: dynamic, left out of Triton's dims
            assert list(tensor.dims) == [d.dim_value for d in dims[1:]]
            assert types[model_config_pb2.DataType.Name(tensor.data_type)] == value.type.tensor_type.elem_type
    assert list(config.input[0].dims) == [1, 8, 8] and list(config.output[0].dims) == [10]
    labels = (folder / config.output[0].label_filename).read_text().splitlines()
    assert labels == [str(d) for d in range(10)]  # the contract's class names, in logit order

    again = main([*args[:-1], "weights", "--triton", "--overwrite"])  # refused: no ONNX to give Triton
    err = capsys.readouterr().err.strip()
    assert again == 2 and "--triton needs the onnx format" in err and "\n" not in err, err
    assert (folder / "config.pbtxt").is_file()  # the refused export left the last one as it was
