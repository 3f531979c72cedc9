"""The protocol's tensors on the wire, without a server: what the end-to-end checks cannot reach cheaply."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from litstarter.extras.serve.request import RequestError
from litstarter.extras.serve.tensors import OutputTensor, encode_response, parse_request
from litstarter.extras.serve.v2 import classify


def binary_body(head: dict, *chunks: bytes) -> tuple[bytes, str]:
    text = json.dumps(head).encode()
    return text + b"".join(chunks), str(len(text))


def test_binary_bytes_elements_and_json_nesting():
    files = [b"\x89PNG one", b"", b"three"]
    raw = b"".join(struct.pack("<I", len(f)) + f for f in files)
    head = {
        "inputs": [
            {"name": "image_bytes", "datatype": "BYTES", "shape": [3], "parameters": {"binary_data_size": len(raw)}}
        ]
    }
    parsed = parse_request(*binary_body(head, raw))
    assert parsed.inputs[0].data == files and parsed.outputs is None
    nested = {"inputs": [{"name": "input", "datatype": "UINT8", "shape": [1, 2, 2], "data": [[[1, 2], [3, 4]]]}]}
    (tensor,) = parse_request(json.dumps(nested).encode()).inputs
    assert tensor.data.dtype == np.uint8 and tensor.data.tolist() == [[[1, 2], [3, 4]]]


@pytest.mark.parametrize(
    "body, words",
    [
        (b"[1, 2]", "must be a JSON object"),
        (b'{"inputs": []}', '"inputs" must be a non-empty list'),
        (b'{"inputs": [{"name": "input", "datatype": "UINT8", "shape": [-1], "data": []}]}', "non-negative integers"),
        (b'{"inputs": [{"name": "input", "datatype": "UINT8", "shape": [2]}]}', 'neither "data"'),
        (b'{"inputs": [{"name": "x", "datatype": "UINT8", "shape": [1], "data": [1.5]}]}', "integers from 0 to 255"),
        (b'{"inputs": [{"name": "x", "datatype": "BYTES", "shape": [1], "data": ["*"]}]}', "not base64"),
        (b'{"inputs": [{"name": "x", "datatype": "INT4", "shape": [1], "data": [1]}]}', "datatype 'INT4'"),
        (
            b'{"inputs": [{"name": "x", "datatype": "UINT8", "shape": [1], "data": [1]}], "outputs": [{"name": 3}]}',
            '"name" string',
        ),
        (
            b'{"inputs": [{"name": "x", "datatype": "UINT8", "shape": [1], "parameters": {"binary_data_size": -5}}]}',
            "binary_data_size must be a number of bytes >= 0, got -5",
        ),
        (
            b'{"inputs": [{"name": "x", "datatype": "UINT8", "shape": [1], "data": [1]}], '
            b'"outputs": [{"name": "logits"}, {"name": "probabilities"}, {"name": "logits"}]}',
            "\"outputs\" names 'logits' more than once",
        ),
    ],
)
def test_malformed_requests_are_400_naming_the_field(body, words):
    with pytest.raises(RequestError) as caught:
        parse_request(body)
    assert caught.value.status == 400 and words in caught.value.message, caught.value.message


def test_binary_lengths_are_checked():
    head = {"inputs": [{"name": "x", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": 6}}]}
    cut = struct.pack("<I", 9) + b"ab"  # a 9-byte element with 2 bytes
    whole = struct.pack("<I", 2) + b"ab"
    for body, header, words in [
        (*binary_body(head, cut), "runs past its binary_data_size"),
        (*binary_body(head, whole + b"extra"), "after the binary tensors"),
        (b"{}", "99", "Inference-Header-Content-Length '99'"),
    ]:
        with pytest.raises(RequestError) as caught:
            parse_request(body, header)
        assert words in caught.value.message, caught.value.message


def test_responses_json_and_binary_and_classification():
    probabilities = np.array([[0.2, 0.5, 0.3]], np.float32)
    rows = classify(probabilities, ["cat", "dog", "eel"], 2)
    assert rows == [[b"0.5:1:dog", b"0.300000012:2:eel"]]
    tensors = [
        OutputTensor("probabilities", "FP32", [1, 3], probabilities, binary=True),
        OutputTensor("classes", "BYTES", [1, 2], rows, binary=False),
    ]
    body, length = encode_response({"model_name": "m"}, tensors)
    head = json.loads(body[:length])
    assert head["outputs"][0]["parameters"] == {"binary_data_size": 12}
    assert np.frombuffer(body[length:], "<f4").tolist() == probabilities.reshape(-1).tolist()
    assert head["outputs"][1]["data"] == ["0.5:1:dog", "0.300000012:2:eel"]
    assert encode_response({}, [OutputTensor("p", "FP32", [1, 3], probabilities, binary=False)])[1] is None
