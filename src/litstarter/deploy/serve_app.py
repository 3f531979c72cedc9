"""The HTTP app behind ``litstarter serve``: routes, the per-request deadline and the counters.

| route | answers |
| --- | --- |
| ``POST /predict`` | ``{"predictions": [{"class", "index", "prob"}, ...]}``, top-k in descending order |
| ``GET /health`` | 200 ``{"status": "ok"}`` once the model is loaded; 503 while starting or draining |
| ``GET /info`` | the model's contract, the artifact and its line from ``export_report.json``; the server options |
| ``GET /stats`` | requests by status, requests in flight, and the histogram of batch sizes |

Each request is read, checked and decoded on its own (:mod:`litstarter.deploy.serve_request`) before it joins a batch
(:mod:`litstarter.deploy.batcher`), all under one deadline (``request_timeout``): past it the client gets 504, and
the server goes on. Torch-free: Starlette, numpy, Pillow and the backend's runtime only.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path

import numpy as np
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from litstarter.deploy.backends import Backend
from litstarter.deploy.batcher import DynamicBatcher
from litstarter.deploy.infer import softmax
from litstarter.deploy.serve_options import ServeOptions
from litstarter.deploy.serve_request import RequestError, check_content_type, decode_image, image_bytes

logger = logging.getLogger("litstarter.deploy.serve")

REPORT_NAME = "export_report.json"  # written by litstarter export beside the artifacts
#: A refused body is read to its end (so the client gets the answer) if at most this much of it is left...
DISCARD_LIMIT = 8 * 1024 * 1024
#: ... and it arrives within this many seconds; otherwise the connection is closed after the answer.
DISCARD_SECONDS = 5.0


class ServerState:
    """Counters for ``/stats`` and the shutdown log line, and whether the server is draining."""

    def __init__(self) -> None:
        self.by_status: Counter[int] = Counter()
        self.received = 0
        self.in_flight = 0
        self.draining = False

    def summary(self, batcher: DynamicBatcher) -> dict:
        """The ``/stats`` body."""
        sizes = dict(sorted(batcher.batch_sizes.items()))
        return {
            "requests": {
                "received": self.received,
                "in_flight": self.in_flight,
                "by_status": {str(k): v for k, v in sorted(self.by_status.items())},
            },
            "batches": {
                "count": sum(sizes.values()),
                "images": sum(size * n for size, n in sizes.items()),
                "sizes": {str(size): n for size, n in sizes.items()},
            },
        }


def top_predictions(logits: np.ndarray, class_names: Sequence[str], k: int) -> list[list[dict]]:
    """Per row of ``(B, K)`` logits, the top ``k`` classes as ``{"class", "index", "prob"}``, best first.

    The same softmax and the same stable ordering as ``litstarter infer``.
    """
    rows = []
    for p in softmax(logits):
        order = np.argsort(-p, kind="stable")[:k]
        rows.append([{"class": class_names[i], "index": int(i), "prob": float(p[i])} for i in order])
    return rows


def verification(model_path: Path) -> dict:
    """The artifact's entry in ``export_report.json`` beside it, with a one-line summary under ``"line"``."""
    report_path = model_path.parent / REPORT_NAME
    if model_path.suffix == ".ckpt":
        return {"line": f"{model_path.name} is the checkpoint itself: the eager reference exports are verified against"}
    if not report_path.is_file():
        return {"line": f"not verified: no {REPORT_NAME} beside {model_path.name}"}
    try:
        report = json.loads(report_path.read_text())
        figures = report["artifacts"][model_path.name]
        v, eager = report["verification"], report["eager"]["accuracy"]
    except (OSError, ValueError, KeyError, TypeError):
        return {"line": f"not verified: {report_path} has no entry for {model_path.name}"}
    result = "passed" if figures.get("passed") else "REJECTED"
    if "error" in figures:
        return {**figures, "line": f"{model_path.name}: {result}: {figures['error'].splitlines()[0]}"}
    line = (
        f"{model_path.name}: {result} against eager on {v['samples']} {v['split']} images: max |diff| "
        f"{figures['max_abs_diff']:.2e}, top-1 agreement {100 * figures['top1_agreement']:.2f}%, accuracy "
        f"{figures['accuracy']:.4f} (eager {eager:.4f})"
    )
    return {**figures, "line": line}


def model_info(backend: Backend) -> dict:
    """The ``"model"`` part of ``/info``: the contract, the artifact and its verification."""
    c = backend.contract
    return {
        "artifact": backend.path.name,
        "path": str(backend.path),
        "kind": backend.kind,
        "runtime": backend.runtime,
        "class_names": list(c.class_names),
        "num_classes": c.num_classes,
        "channels": c.channels,
        "color_mode": c.color_mode,
        "input_size": list(c.image_size),
        "resize_size": list(c.resize_size),
        "verification": verification(backend.path),
    }


def error(status: int, message: str, close: bool = False) -> JSONResponse:
    """``{"error": message}``; ``close`` ends the connection (its body may be unread)."""
    return JSONResponse({"error": message}, status, headers={"Connection": "close"} if close else None)


class Body:
    """A request body read through its ASGI ``receive``, so that a refused one can still be read to its end.

    Answering before the client has sent its whole body and then closing makes the kernel reset the connection,
    and the client may never see the answer. So a refused body is read and dropped (up to :data:`DISCARD_LIMIT`)
    before the answer goes out.
    """

    def __init__(self, request: Request) -> None:
        self._receive = request.receive
        self.ended = False

    async def _chunks(self):
        while not self.ended:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                raise RequestError(400, "the client disconnected before the body ended")
            self.ended = not message.get("more_body", False)
            yield message.get("body", b"")

    async def read(self, max_bytes: int) -> bytes:
        """The whole body, refused (413) as soon as it is known to be over ``max_bytes``."""
        chunks, size = [], 0
        async for chunk in self._chunks():
            size += len(chunk)
            if size > max_bytes:
                raise RequestError(413, f"the body is over the limit of {max_bytes} bytes (--max_bytes)")
            chunks.append(chunk)
        return b"".join(chunks)

    async def discard(self, limit: int) -> bool:
        """Read and drop the rest of the body, up to ``limit`` bytes; whether it ended."""
        size = 0
        try:
            async for chunk in self._chunks():
                size += len(chunk)
                if size > limit:
                    return False
        except RequestError:
            return False
        return True


def create_app(
    backends: Sequence[Backend], options: ServeOptions, on_ready: Callable[[], None] | None = None
) -> Starlette:
    """The Starlette app serving ``backends`` (one per model worker, all of the same model).

    Args:
        backends: The loaded model, once per worker.
        options: Batching, limits and the deadline.
        on_ready: Called once the workers are started (``litstarter serve`` prints its "listening" line there).
    """
    backend = backends[0]
    contract = backend.contract
    k = min(options.topk, contract.num_classes)

    def worker(model: Backend) -> Callable[[np.ndarray], list]:
        return lambda images: top_predictions(model(images), contract.class_names, k)

    batcher = DynamicBatcher([worker(b) for b in backends], options.max_batch_size, options.batch_timeout)
    state = ServerState()
    info = {"model": model_info(backend), "server": asdict(options)}

    async def answer(request: Request, body: Body) -> JSONResponse:
        kind = check_content_type(request.headers.get("content-type"))
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > options.max_bytes:
            raise RequestError(
                413, f"the body is {declared} bytes, over the limit of {options.max_bytes} (--max_bytes)"
            )
        data = image_bytes(kind, await body.read(options.max_bytes))
        image = await run_in_threadpool(decode_image, data, contract, options.max_pixels)  # (C, H, W) uint8
        return JSONResponse({"predictions": await batcher.submit(image)})

    async def refuse(body: Body, status: int, message: str) -> JSONResponse:
        try:
            ended = await asyncio.wait_for(body.discard(DISCARD_LIMIT), DISCARD_SECONDS)
        except asyncio.TimeoutError:
            ended = False
        return error(status, message, close=not ended)

    async def predict(request: Request) -> JSONResponse:
        state.received += 1
        state.in_flight += 1
        body = Body(request)
        try:
            response = await asyncio.wait_for(answer(request, body), options.request_timeout)
        except RequestError as err:
            response = await refuse(body, err.status, err.message)
        except asyncio.TimeoutError:
            response = error(504, f"no answer within --request_timeout {options.request_timeout:g} s", close=True)
        except Exception as err:  # the model failed on this request's batch: a server error, logged in full
            logger.exception("the model failed on a batch")
            response = error(
                500, f"the model failed: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
            )
        finally:
            state.in_flight -= 1
        state.by_status[response.status_code] += 1
        return response

    async def health(request: Request) -> JSONResponse:
        if state.draining:
            return JSONResponse({"status": "draining"}, 503)
        if not batcher.running:
            return JSONResponse({"status": "starting"}, 503)
        return JSONResponse({"status": "ok", "model": backend.path.name})

    async def show_info(request: Request) -> JSONResponse:
        return JSONResponse(info)

    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(state.summary(batcher))

    @asynccontextmanager
    async def lifespan(app: Starlette):
        await batcher.start()
        if on_ready is not None:
            on_ready()
        try:
            yield
        finally:
            await batcher.stop()

    app = Starlette(
        routes=[
            Route("/predict", predict, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            Route("/info", show_info, methods=["GET"]),
            Route("/stats", stats, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.serve = state
    app.state.batcher = batcher
    return app
