"""The Open Inference Protocol (KServe v2 REST) routes of ``litstarter serve``, beside our own JSON routes.

| route | answers |
| --- | --- |
| ``GET /v2/health/live`` | 200 while the process answers (during loading and draining too) |
| ``GET /v2/health/ready`` | 200 once the model is loaded; 503 while loading and while draining |
| ``GET /v2`` | server metadata: name, version, the extensions supported |
| ``GET /v2/models/{name}`` | the model's inputs and outputs: names, datatypes, shapes (``-1``: the batch) |
| ``GET /v2/models/{name}/ready`` | as ``/v2/health/ready``, for this model |
| ``POST /v2/models/{name}/infer`` | an inference request; ``/versions/1/`` before the last part is accepted too |

The model takes either of two inputs, one per request:

- ``input`` ``UINT8 [B, C, H, W]``: images already resized and cropped as ``model.json`` says (what a Triton
  client sends to the exported ``model.onnx``);
- ``image_bytes`` ``BYTES [B]``: encoded image files, decoded by ``/predict``'s checks and preprocessing.

Either way each image joins the batcher on its own, like a ``/predict`` request. The outputs are ``logits``
``FP32 [B, K]`` (what the ONNX graph returns, and Triton serving it) and the task's own outputs ``FP32 [B, K]``, as
``/predict`` gives them, named by the task (``TaskAnswers.output_name``): ``probabilities`` (a softmax, or a
multi-label model's sigmoid per label), ``values`` (a regression's, de-standardised). With Triton's classification
extension (``"parameters": {"classification": k}`` on a requested output) a classifier's output becomes ``BYTES
[B, k]`` of ``"<value>:<index>:<label>"``, best first; a task whose outputs rank no classes refuses it in one line.
Errors are ``{"error": "..."}``: 400 for a malformed request or tensor, 404 for another model's name or version,
413 / 415 / 504 as for ``/predict``, 503 while loading.
A route the server lacks is 404 ``{"error": ...}`` too (Triton's model configuration, statistics and repository
extensions among them), and a wrong method 405 (:func:`unserved_route`), so that a protocol client reads why.
"""

from __future__ import annotations

import asyncio

import numpy as np
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import litstarter
from litstarter.extras.serve.request import Body, RequestError, decode_request_image, media_type
from litstarter.extras.serve.service import Service, error
from litstarter.extras.serve.tensors import (
    DTYPES,
    HEADER_LENGTH,
    InferRequest,
    OutputTensor,
    RequestedOutput,
    encode_response,
    parse_request,
)

#: What ``GET /v2`` advertises: Triton's extensions this server implements.
EXTENSIONS = ["binary_tensor_data", "classification"]
BYTES_INPUT = "image_bytes"
VERSION = "1"
#: Bodies over this many bytes are parsed in a thread.
PARSE_IN_THREAD = 1 << 20
#: Request bodies of these media types are read (tritonclient sends none).
BODY_TYPES = ("", "application/json", "application/octet-stream")


class ProtocolRoutes:
    """The ``/v2`` route handlers, on the shared :class:`~litstarter.extras.serve.service.Service`.

    Args:
        service: The model, the batcher and the counters.
    """

    def __init__(self, service: Service) -> None:
        self.service = service

    async def live(self, request: Request) -> Response:
        """``GET /v2/health/live``: the process answers."""
        return JSONResponse({"live": True})

    async def ready(self, request: Request) -> Response:
        """``GET /v2/health/ready``: 200 when loaded and not draining, else 503."""
        ready = self.service.ready
        return JSONResponse({"ready": ready}, 200 if ready else 503)

    async def server_metadata(self, request: Request) -> Response:
        """``GET /v2``."""
        return JSONResponse({"name": "litstarter", "version": litstarter.__version__, "extensions": EXTENSIONS})

    def _check_model(self, request: Request) -> None:
        name, version = request.path_params["name"], request.path_params.get("version", VERSION)
        if name != self.service.model_name or version != VERSION:
            which = f"model {name!r}" + (f" version {version!r}" if "version" in request.path_params else "")
            raise RequestError(
                404, f"{which} is not served here: this server serves {self.service.model_name!r} version {VERSION!r}"
            )

    async def model_ready(self, request: Request) -> Response:
        """``GET /v2/models/{name}/ready``."""
        try:
            self._check_model(request)
        except RequestError as err:
            return error(err.status, err.message)
        return await self.ready(request)

    async def model_metadata(self, request: Request) -> Response:
        """``GET /v2/models/{name}``: inputs and outputs with names, datatypes and shapes."""
        try:
            self._check_model(request)
        except RequestError as err:
            return error(err.status, err.message)
        backend = self.service.backend
        if backend is None:
            return error(503, "the model is still loading; retry later")
        c = backend.contract
        answers = c.answers()  # the task's outputs' shapes and datatypes
        logits = [-1, *answers.logits_shape(c.image_size)]
        return JSONResponse(
            {
                "name": self.service.model_name,
                "versions": [VERSION],
                "platform": f"litstarter_{backend.kind}",
                "inputs": [
                    {"name": c.input_name, "datatype": "UINT8", "shape": [-1, c.channels, *c.image_size]},
                    {"name": BYTES_INPUT, "datatype": "BYTES", "shape": [-1]},
                ],
                "outputs": [
                    {"name": c.output_name, "datatype": "FP32", "shape": logits},
                    *answers.output_specs(c.image_size),
                ],
            }
        )

    async def infer(self, request: Request) -> Response:
        """``POST /v2/models/{name}/infer``: every failure is this request's alone."""
        body = Body(request.receive)
        return await self.service.guarded(body, lambda: self._answer(request, body))

    async def _answer(self, request: Request, body: Body) -> Response:
        s = self.service
        self._check_model(request)
        content_type, encoding = request.headers.get("content-type"), request.headers.get("content-encoding", "")
        compressed = encoding.strip().lower() not in ("", "identity")
        if media_type(content_type) not in BODY_TYPES or compressed:
            what = f"Content-Encoding {encoding!r}" if compressed else f"Content-Type {content_type!r}"
            raise RequestError(415, f"{what} is not accepted: send an uncompressed JSON inference request")
        declared, limit = request.headers.get("content-length", ""), s.options.max_bytes
        if declared.isdigit() and int(declared) > limit:
            raise RequestError(413, f"the body is {declared} bytes, over the limit of {limit} (--max_bytes)")
        data, header_length = await body.read(limit), request.headers.get(HEADER_LENGTH)
        if len(data) > PARSE_IN_THREAD:  # a large JSON body would hold up the event loop while it is parsed
            parsed = await run_in_threadpool(parse_request, data, header_length)
        else:
            parsed = parse_request(data, header_length)
        self._check_outputs(parsed)
        images = await self._images(parsed)  # (B, C, H, W) uint8
        outputs = self._outputs(parsed, np.stack(await s.predict(images)))  # (B, K) logits; (B, K, H, W) of maps
        head = {"model_name": s.model_name, "model_version": VERSION}
        if parsed.id is not None:
            head["id"] = parsed.id
        content, json_length = encode_response(head, outputs)
        if json_length is None:
            return Response(content, media_type="application/json")
        headers = {"Inference-Header-Content-Length": str(json_length)}
        return Response(content, media_type="application/octet-stream", headers=headers)

    async def _images(self, parsed: InferRequest) -> np.ndarray:
        """The request's one input as ``(B, C, H, W)`` uint8: the tensor itself, or its files decoded."""
        c = self.service.backend.contract
        names = [c.input_name, BYTES_INPUT]
        if len(parsed.inputs) != 1 or parsed.inputs[0].name not in names:
            got = [t.name for t in parsed.inputs]
            raise RequestError(400, f"expected one input, {names[0]!r} (UINT8) or {names[1]!r} (BYTES), got {got}")
        tensor, expected = parsed.inputs[0], [c.channels, *c.image_size]
        if tensor.name == c.input_name:
            if tensor.datatype != "UINT8" or len(tensor.shape) != 4 or tensor.shape[1:] != expected:
                raise RequestError(
                    400,
                    f"input {tensor.name!r} must be UINT8 [B, {', '.join(map(str, expected))}], got "
                    f"{tensor.datatype} {tensor.shape}",
                )
            self._check_batch(tensor.shape[0])
            return tensor.data
        if tensor.datatype != "BYTES" or len(tensor.shape) not in (1, 2) or tensor.shape[1:] not in ([], [1]):
            raise RequestError(
                400,
                f"input {BYTES_INPUT!r} must be BYTES [B] (one image file each), got {tensor.datatype} {tensor.shape}",
            )
        if c.tiling is not None:
            shape = ", ".join(map(str, expected))
            raise RequestError(
                400,
                f"input {BYTES_INPUT!r} is not taken by a model that slides windows over each file (model.json's"
                f" tiling): POST the file to /predict, or send {c.input_name!r} windows of UINT8 [B, {shape}]",
            )
        self._check_batch(len(tensor.data))
        pixels = self.service.options.max_pixels
        decoded = await asyncio.gather(*(decode_request_image(data, c, pixels) for data in tensor.data))
        return np.stack(decoded)

    def _check_batch(self, size: int) -> None:
        most = self.service.options.max_batch_size
        if not 1 <= size <= most:
            raise RequestError(400, f"a request holds 1 to --max_batch_size {most} images, got {size}")

    def _check_outputs(self, parsed: InferRequest) -> None:
        """Refuse outputs the model lacks, and classifications of more classes than it has, before predicting."""
        c = self.service.backend.contract
        answers = c.answers()
        names = [c.output_name, *(spec["name"] for spec in answers.output_specs(c.image_size))]
        for out in parsed.outputs or []:
            if out.name not in names:
                raise RequestError(400, f"output {out.name!r} is not one of this model's: {names}")
            if out.classification and not answers.ranks_classes:
                raise RequestError(
                    400, f"output {out.name!r}: classification ranks classes, and a {c.task} model's outputs are none"
                )
            if out.classification > c.num_classes:
                raise RequestError(
                    400, f"output {out.name!r}: classification {out.classification} is over the {c.num_classes} classes"
                )

    def _outputs(self, parsed: InferRequest, logits: np.ndarray) -> list[OutputTensor]:
        """The outputs asked for (all, if none were): logits, probabilities, or their classification."""
        c = self.service.backend.contract
        answers = c.answers()  # the task's own: a softmax, a sigmoid per label, values, class maps, boxes
        values = {c.output_name: (logits, "FP32"), **answers.output_tensors(logits)}
        requested = parsed.outputs
        if requested is None:
            requested = [RequestedOutput(name, parsed.binary_output) for name in values]
        tensors = []
        for out in requested:
            data, datatype = values[out.name]
            data = data.astype(DTYPES[datatype])
            if out.classification:
                rows = classify(data, c.class_names, out.classification)
                tensors.append(OutputTensor(out.name, "BYTES", [len(rows), out.classification], rows, out.binary))
            else:
                tensors.append(OutputTensor(out.name, datatype, list(data.shape), data, out.binary))
        return tensors


def classify(values: np.ndarray, class_names, k: int) -> list[list[bytes]]:
    """Triton's classification of ``(B, K)`` values: per row the top ``k`` as ``b"<value>:<index>:<label>"``.

    The same stable order as ``/predict`` and ``litstarter infer``; the value with 9 significant digits (an FP32's
    full precision; Triton prints 6 decimals).
    """
    rows = []
    for row in values:
        order = np.argsort(-row, kind="stable")[:k]
        rows.append([f"{float(row[i]):.9g}:{int(i)}:{class_names[i]}".encode() for i in order])
    return rows


#: What a request to a route this server lacks is told it has.
ROUTES = {
    "/v2": "the Open Inference Protocol's GET /v2, /v2/health/live, /v2/health/ready, /v2/models/{name} and "
    "/v2/models/{name}/ready, and POST /v2/models/{name}/infer (no model configuration, statistics or repository)",
    "": "POST /predict; GET /health, /info, /stats, /metrics; and the Open Inference Protocol under /v2",
}


async def unserved_route(request: Request, exc: HTTPException) -> Response:
    """The app's answer to a route it lacks (404) or a method a route does not take (405): ``{"error": ...}``, as
    every other refusal, where Starlette would answer plain text (which ``tritonclient`` cannot parse)."""
    what = f"{request.method} {request.url.path}"
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        return JSONResponse({"error": f"{what}: this route takes {allowed}"}, 405, headers=exc.headers)
    if exc.status_code != 404:
        return JSONResponse({"error": f"{what}: {exc.detail}"}, exc.status_code, headers=exc.headers)
    path = request.url.path
    served = ROUTES["/v2" if path == "/v2" or path.startswith("/v2/") else ""]
    return JSONResponse({"error": f"{what} is not a route of this server; it serves {served}"}, 404)
