"""The HTTP app behind ``litstarter serve``: routes, the per-request deadline and the counters.

| route | answers |
| --- | --- |
| ``POST /predict`` | ``{"predictions": [{"class", "index", "prob"}, ...]}``, top-k in descending order |
| ``GET /health`` | 200 ``{"status": "ok"}`` once the model is loaded; 503 while starting or draining |
| ``GET /info`` | the model's contract, the artifact and its line from ``export_report.json``; the server options |
| ``GET /stats`` | requests by status, requests in flight, and the histogram of batch sizes |

Each request is read, checked and decoded on its own (:mod:`litstarter.extras.serve.request`) before it joins a batch
(:mod:`litstarter.extras.serve.batcher`), all under one deadline (``request_timeout``): past it the client gets 504, and
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

from litstarter.extras.deploy.backends import Backend
from litstarter.extras.deploy.infer import softmax
from litstarter.extras.serve.batcher import DynamicBatcher
from litstarter.extras.serve.options import ServeOptions
from litstarter.extras.serve.request import (
    DISCARD_LIMIT,
    DISCARD_SECONDS,
    Body,
    RequestError,
    check_content_type,
    decode_image,
    image_bytes,
)

logger = logging.getLogger("litstarter.extras.serve.command")

REPORT_NAME = "export_report.json"  # written by litstarter export beside the artifacts


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


class Routes:
    """The route handlers, sharing the model, the batcher and the counters.

    Args:
        backends: The loaded model, once per worker.
        options: Batching, limits and the deadline.
    """

    def __init__(self, backends: Sequence[Backend], options: ServeOptions) -> None:
        self.backend = backends[0]
        self.contract = self.backend.contract
        self.options = options
        k = min(options.topk, self.contract.num_classes)

        def worker(model: Backend) -> Callable[[np.ndarray], list]:
            return lambda images: top_predictions(model(images), self.contract.class_names, k)

        self.batcher = DynamicBatcher([worker(b) for b in backends], options.max_batch_size, options.batch_timeout)
        self.state = ServerState()
        self.info_body = {"model": model_info(self.backend), "server": asdict(options)}

    async def predict(self, request: Request) -> JSONResponse:
        """``POST /predict``: one image in, its top-k out; every failure is this request's alone."""
        self.state.received += 1
        self.state.in_flight += 1
        body = Body(request.receive)
        try:
            response = await asyncio.wait_for(self._answer(request, body), self.options.request_timeout)
        except RequestError as err:
            response = await self._refuse(body, err.status, err.message)
        except asyncio.TimeoutError:
            late = f"no answer within --request_timeout {self.options.request_timeout:g} s"
            response = error(504, late, close=True)  # the body may be half read
        except Exception as err:  # the model failed on this request's batch: a server error, logged in full
            logger.exception("the model failed on a batch")
            reason = str(err).splitlines()[0] if str(err) else ""
            response = error(500, f"the model failed: {type(err).__name__}: {reason}")
        finally:
            self.state.in_flight -= 1
        self.state.by_status[response.status_code] += 1
        return response

    async def _answer(self, request: Request, body: Body) -> JSONResponse:
        kind = check_content_type(request.headers.get("content-type"))
        declared, limit = request.headers.get("content-length", ""), self.options.max_bytes
        if declared.isdigit() and int(declared) > limit:
            raise RequestError(413, f"the body is {declared} bytes, over the limit of {limit} (--max_bytes)")
        data = image_bytes(kind, await body.read(limit))
        image = await run_in_threadpool(decode_image, data, self.contract, self.options.max_pixels)  # (C, H, W)
        return JSONResponse({"predictions": await self.batcher.submit(image)})

    async def _refuse(self, body: Body, status: int, message: str) -> JSONResponse:
        try:
            ended = await asyncio.wait_for(body.discard(DISCARD_LIMIT), DISCARD_SECONDS)
        except asyncio.TimeoutError:
            ended = False
        return error(status, message, close=not ended)

    async def health(self, request: Request) -> JSONResponse:
        """``GET /health``: 200 once the workers run; 503 while starting or draining."""
        if self.state.draining:
            return JSONResponse({"status": "draining"}, 503)
        if not self.batcher.running:
            return JSONResponse({"status": "starting"}, 503)
        return JSONResponse({"status": "ok", "model": self.backend.path.name})

    async def info(self, request: Request) -> JSONResponse:
        """``GET /info``: the model's contract, the artifact and its verification; the server's options."""
        return JSONResponse(self.info_body)

    async def stats(self, request: Request) -> JSONResponse:
        """``GET /stats``: requests by status and in flight, and the histogram of batch sizes."""
        return JSONResponse(self.state.summary(self.batcher))


def create_app(
    backends: Sequence[Backend], options: ServeOptions, on_ready: Callable[[], None] | None = None
) -> Starlette:
    """The Starlette app serving ``backends`` (one per model worker, all of the same model).

    ``app.state.serve`` holds the counters (:class:`ServerState`), ``app.state.batcher`` the batcher.

    Args:
        backends: The loaded model, once per worker.
        options: Batching, limits and the deadline.
        on_ready: Called once the workers are started (``litstarter serve`` prints its "listening" line there).
    """
    routes = Routes(backends, options)

    @asynccontextmanager
    async def lifespan(app: Starlette):
        await routes.batcher.start()
        if on_ready is not None:
            on_ready()
        try:
            yield
        finally:
            await routes.batcher.stop()

    app = Starlette(
        routes=[
            Route("/predict", routes.predict, methods=["POST"]),
            Route("/health", routes.health, methods=["GET"]),
            Route("/info", routes.info, methods=["GET"]),
            Route("/stats", routes.stats, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.serve = routes.state
    app.state.batcher = routes.batcher
    return app
