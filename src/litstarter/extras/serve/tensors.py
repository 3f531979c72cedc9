"""The Open Inference Protocol's tensors on the wire: an inference request's body in, a response's body out.

Both encodings of the protocol (KServe v2 REST) are read and written:

- **JSON**: each input carries ``"data"``, its elements row-major (flat or nested); ``BYTES`` elements are
  strings. Image files are not text, so a ``BYTES`` element sent as JSON is read as the base64 of the file
  (litstarter's convention; Triton would take the string's own bytes).
- **Triton's binary tensor data extension** (what ``tritonclient`` sends by default): the header
  ``Inference-Header-Content-Length`` gives the JSON's length, the raw bytes of the tensors follow it in input
  order, each input says how many with ``parameters.binary_data_size``; numbers little-endian, each ``BYTES``
  element a 4-byte little-endian length and its bytes. An output is sent binary when its requested output asks
  ``parameters.binary_data``, or the request's ``parameters.binary_data_output`` does.

Every way a request can be malformed is a :class:`~litstarter.extras.serve.request.RequestError` 400 naming the
input and what was expected. Numpy only.
"""

from __future__ import annotations

import binascii
import json
import math
import struct
from dataclasses import dataclass, field

import numpy as np

from litstarter.extras.serve.request import RequestError, decode_base64

#: The protocol's datatypes that this server reads or writes, and their numpy types.
DTYPES = {"UINT8": np.dtype("<u1"), "FP32": np.dtype("<f4"), "INT64": np.dtype("<i8"), "FP64": np.dtype("<f8")}
HEADER_LENGTH = "inference-header-content-length"


@dataclass
class InputTensor:
    """One input of a request: ``data`` is an ndarray of ``shape`` for numbers, a flat list of bytes for BYTES."""

    name: str
    datatype: str
    shape: list[int]
    data: np.ndarray | list[bytes]


@dataclass
class RequestedOutput:
    """One requested output: its name, whether it goes back binary, and its classification count (0: none)."""

    name: str
    binary: bool
    classification: int = 0


@dataclass
class InferRequest:
    """A parsed inference request: the request's id, its inputs, and the outputs asked for (``None``: all)."""

    id: str | None
    inputs: list[InputTensor]
    outputs: list[RequestedOutput] | None
    binary_output: bool = False
    parameters: dict = field(default_factory=dict)


def _bad(message: str) -> RequestError:
    return RequestError(400, message)


def _object(value, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(f"{what} must be a JSON object, got {type(value).__name__}")
    return value


def split_body(body: bytes, header_length: str | None) -> tuple[dict, memoryview]:
    """The request's JSON object and the binary bytes after it.

    Raises:
        RequestError: 400 for a bad ``Inference-Header-Content-Length`` or a body that is not a JSON object.
    """
    binary = memoryview(b"")
    if header_length is not None:
        if not header_length.strip().isdigit() or not 0 < int(header_length) <= len(body):
            raise _bad(
                f"Inference-Header-Content-Length {header_length!r} must be a number of bytes from 1 to the "
                f"body's {len(body)}"
            )
        body, binary = body[: int(header_length)], memoryview(body)[int(header_length) :]
    if not body:
        raise _bad('the body is empty: expected a JSON inference request {"inputs": [...]}')
    try:
        request = json.loads(body)
    except (UnicodeDecodeError, RecursionError, ValueError) as err:
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err).splitlines()[0]
        raise _bad(f'the body is not a JSON inference request ({reason}): expected {{"inputs": [...]}}') from None
    if not isinstance(request, dict):
        raise _bad(f'the body must be a JSON object {{"inputs": [...]}}, got {type(request).__name__}')
    return request, binary


def parse_request(body: bytes, header_length: str | None = None) -> InferRequest:
    """Read an inference request (JSON, or JSON followed by binary tensors).

    Args:
        body: The whole request body.
        header_length: The ``Inference-Header-Content-Length`` header, if any.

    Raises:
        RequestError: 400 naming the field or input that is wrong.
    """
    request, binary = split_body(body, header_length)
    parameters = _object(request.get("parameters"), '"parameters"')
    raw_inputs = request.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise _bad('"inputs" must be a non-empty list of tensors {"name", "datatype", "shape", "data"}')
    offset, inputs = 0, []
    for i, raw in enumerate(raw_inputs):
        tensor, used = read_input(_object(raw, f"inputs[{i}]"), binary[offset:], i)
        inputs.append(tensor)
        offset += used
    if offset != len(binary):
        raise _bad(f"the body holds {len(binary) - offset} byte(s) after the binary tensors its inputs declare")
    binary_output = parameters.get("binary_data_output", False) is True
    outputs = None
    if request.get("outputs") is not None:
        if not isinstance(request["outputs"], list):
            raise _bad('"outputs" must be a list of {"name", "parameters"}')
        outputs = [read_output(_object(o, f"outputs[{i}]"), binary_output) for i, o in enumerate(request["outputs"])]
        names = [o.name for o in outputs]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise _bad(f'"outputs" names {", ".join(map(repr, repeated))} more than once: ask for each output once')
    request_id = request.get("id")
    return InferRequest(None if request_id is None else str(request_id), inputs, outputs, binary_output, parameters)


def read_input(raw: dict, binary: memoryview, index: int) -> tuple[InputTensor, int]:
    """One input tensor from its JSON object (and the binary bytes left); returns it and the bytes it used."""
    name, datatype, shape = raw.get("name"), raw.get("datatype"), raw.get("shape")
    if not isinstance(name, str) or not isinstance(datatype, str):
        raise _bad(f'inputs[{index}] needs a "name" and a "datatype" string')
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise _bad(f'input {name!r}: "shape" must be a list of non-negative integers, got {shape!r}')
    if datatype != "BYTES" and datatype not in DTYPES:
        raise _bad(f"input {name!r}: datatype {datatype!r} is not one this server reads ({', '.join(DTYPES)}, BYTES)")
    count = math.prod(shape)
    size = _object(raw.get("parameters"), f"input {name!r} parameters").get("binary_data_size")
    if size is not None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise _bad(f"input {name!r}: binary_data_size must be a number of bytes >= 0, got {size!r}")
        if size > len(binary):
            raise _bad(f"input {name!r}: binary_data_size {size} exceeds the {len(binary)} binary byte(s) left")
        chunk = binary[:size]
        if datatype == "BYTES":
            data = split_bytes(chunk, name)
        else:
            expected = count * DTYPES[datatype].itemsize
            if size != expected:
                raise _bad(f"input {name!r}: {size} bytes for {datatype} {shape}; expected {expected}")
            data = np.frombuffer(chunk, DTYPES[datatype]).reshape(shape)
    else:
        if "data" not in raw:
            raise _bad(f'input {name!r} has neither "data" nor parameters.binary_data_size')
        data, size = json_data(raw["data"], datatype, name), 0
    got = len(data) if datatype == "BYTES" else data.size
    if got != count:
        raise _bad(f"input {name!r}: {got} element(s) for shape {shape}; expected {count}")
    if datatype != "BYTES":
        data = data.reshape(shape)
    return InputTensor(name, datatype, shape, data), size


def split_bytes(chunk: memoryview, name: str) -> list[bytes]:
    """BYTES elements in binary: each a 4-byte little-endian length, then that many bytes."""
    elements, offset = [], 0
    while offset < len(chunk):
        if offset + 4 > len(chunk):
            raise _bad(f"input {name!r}: a BYTES element's 4-byte length is cut off at byte {offset}")
        (length,) = struct.unpack_from("<I", chunk, offset)
        if offset + 4 + length > len(chunk):
            raise _bad(f"input {name!r}: a BYTES element of {length} bytes runs past its binary_data_size")
        elements.append(bytes(chunk[offset + 4 : offset + 4 + length]))
        offset += 4 + length
    return elements


def json_data(data, datatype: str, name: str) -> np.ndarray | list[bytes]:
    """An input's JSON ``"data"``: numbers as an ndarray (checked to fit the type), BYTES as base64-decoded bytes."""
    flat = list(_flatten(data, name))
    if datatype == "BYTES":
        if not all(isinstance(e, str) for e in flat):
            raise _bad(f"input {name!r}: BYTES data must be strings (base64 of each image file)")
        try:
            return [decode_base64(e) for e in flat]
        except (binascii.Error, ValueError):
            raise _bad(
                f"input {name!r}: a BYTES element is not base64 (as JSON, each file is sent as base64)"
            ) from None
    if not all(isinstance(e, (int, float)) and not isinstance(e, bool) for e in flat):
        raise _bad(f"input {name!r}: {datatype} data must be numbers")
    dtype = DTYPES[datatype]
    values = np.asarray(flat, dtype=np.float64)
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        if not (np.all(values == np.round(values)) and np.all((values >= info.min) & (values <= info.max))):
            raise _bad(f"input {name!r}: {datatype} data must be integers from {info.min} to {info.max}")
    return values.astype(dtype)


def _flatten(data, name: str, depth: int = 0):
    if depth > 16:
        raise _bad(f'input {name!r}: "data" is nested deeper than any tensor this server takes')
    if isinstance(data, list):
        for item in data:
            yield from _flatten(item, name, depth + 1)
    else:
        yield data


def read_output(raw: dict, binary_default: bool) -> RequestedOutput:
    """One requested output: name, ``parameters.binary_data`` and ``parameters.classification``."""
    name = raw.get("name")
    if not isinstance(name, str):
        raise _bad('each of "outputs" needs a "name" string')
    parameters = _object(raw.get("parameters"), f"output {name!r} parameters")
    binary = parameters.get("binary_data", binary_default)
    count = parameters.get("classification", 0)
    if not isinstance(binary, bool):
        raise _bad(f"output {name!r}: binary_data must be true or false, got {binary!r}")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise _bad(f"output {name!r}: classification must be a count of classes >= 1, got {count!r}")
    return RequestedOutput(name, binary, count)


@dataclass
class OutputTensor:
    """One output of a response: ``data`` an ndarray (numbers) or a ``(B, k)`` nested list of bytes (BYTES)."""

    name: str
    datatype: str
    shape: list[int]
    data: np.ndarray | list[list[bytes]]
    binary: bool


def _raw(tensor: OutputTensor) -> bytes:
    if tensor.datatype == "BYTES":
        return b"".join(struct.pack("<I", len(e)) + e for row in tensor.data for e in row)
    return np.ascontiguousarray(tensor.data, DTYPES[tensor.datatype]).tobytes()


def encode_response(head: dict, outputs: list[OutputTensor]) -> tuple[bytes, int | None]:
    """The response body and, if any output is binary, the JSON's length (``Inference-Header-Content-Length``)."""
    described, chunks = [], []
    for tensor in outputs:
        entry = {"name": tensor.name, "datatype": tensor.datatype, "shape": tensor.shape}
        if tensor.binary:
            chunks.append(_raw(tensor))
            entry["parameters"] = {"binary_data_size": len(chunks[-1])}
        elif tensor.datatype == "BYTES":
            entry["data"] = [e.decode() for row in tensor.data for e in row]
        else:
            entry["data"] = tensor.data.reshape(-1).tolist()
        described.append(entry)
    text = json.dumps({**head, "outputs": described}).encode()
    return (text + b"".join(chunks), len(text)) if chunks else (text, None)
