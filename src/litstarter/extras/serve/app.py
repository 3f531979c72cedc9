"""The HTTP app behind ``litstarter serve``: our JSON routes, the protocol's, the probes and the metrics.

| route | answers |
| --- | --- |
| ``POST /predict`` | ``{"predictions": [{"class", "index", "prob"}, ...]}``, top-k in descending order |
| ``GET /health`` | 200 ``{"status": "ok"}`` once the model is loaded; 503 while starting or draining |
| ``GET /info`` | the model's contract, the artifact and its line from ``export_report.json``; the server options |
| ``GET /stats`` | requests by status, requests in flight, and the histogram of batch sizes |
| ``GET /metrics`` | the same and more in Prometheus' text format (:mod:`litstarter.extras.serve.metrics`) |
| ``/v2/...`` | the Open Inference Protocol (KServe v2) and its probes (:mod:`litstarter.extras.serve.v2`) |

A model trained on tiles (``model.json``'s ``tiling``) answers ``/predict`` on the posted file at its own size: its
windows join the batcher one by one and their outputs are gathered by the tiling's rule. Each request is read, checked
and decoded on its own (:mod:`litstarter.extras.serve.request`) before it joins a batch
(:mod:`litstarter.extras.serve.batcher`), all under one deadline (``request_timeout``): past it the client gets 504, and
the server goes on. The model loads in the background (:mod:`litstarter.extras.serve.service`): the server answers
probes from the start. Torch-free: Starlette, numpy, Pillow and the backend's runtime only.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from litstarter.extras.deploy.backends import Backend
from litstarter.extras.deploy.tiling import predict_image_async
from litstarter.extras.serve.options import ServeOptions
from litstarter.extras.serve.request import Body, RequestError, check_content_type, decode_request_image, image_bytes
from litstarter.extras.serve.service import Service
from litstarter.extras.serve.v2 import ProtocolRoutes, unserved_route
from litstarter.tasks.answers import figure_label

REPORT_NAME = "export_report.json"  # written by litstarter export beside the artifacts


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
        v = report["verification"]
        agreed, scored = v["agreement"], v["score"]  # the task's names (top1_agreement / accuracy, ...)
        eager = report["eager"][scored]
    except (OSError, ValueError, KeyError, TypeError):
        return {"line": f"not verified: {report_path} has no entry for {model_path.name}"}
    result = "passed" if figures.get("passed") else "REJECTED"
    if "error" in figures:
        return {**figures, "line": f"{model_path.name}: {result}: {figures['error'].splitlines()[0]}"}
    line = (
        f"{model_path.name}: {result} against eager on {v['samples']} {v['split']} images: max |diff| "
        f"{figures['max_abs_diff']:.2e}, {figure_label(agreed)}"
        f" {100 * figures[agreed]:.2f}%, {scored} {figures[scored]:.4f} (eager {eager:.4f})"
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
        **c.answers().contract_fields(),  # the task's own fields (multi-label: task, thresholds)
        "verification": verification(backend.path),
    }


class Routes:
    """Our JSON routes (``/predict``, ``/health``, ``/info``, ``/stats``), on the shared :class:`Service`.

    Args:
        service: The model, the batcher and the counters.
    """

    def __init__(self, service: Service) -> None:
        self.service = service
        self.info_body: dict | None = None

    async def predict(self, request: Request) -> Response:
        """``POST /predict``: one image in, its top-k out; every failure is this request's alone."""
        return await self.service.guarded(body := Body(request.receive), lambda: self._answer(request, body))

    async def _answer(self, request: Request, body: Body) -> Response:
        s = self.service
        kind = check_content_type(request.headers.get("content-type"))
        declared, limit = request.headers.get("content-length", ""), s.options.max_bytes
        if declared.isdigit() and int(declared) > limit:
            raise RequestError(413, f"the body is {declared} bytes, over the limit of {limit} (--max_bytes)")
        data = image_bytes(kind, await body.read(limit))
        contract = s.backend.contract
        image = await decode_request_image(data, contract, s.options.max_pixels)  # (C, H, W)
        if contract.tiling is None:
            (logits,) = await s.predict(image[None])
            logits = logits[None]
        else:  # at its own size: each window joins the batcher, the outputs gathered by model.json's tiling
            logits = await predict_image_async(contract, s.predict, image)
        answers = contract.answers()  # the task's: what its outputs mean
        answer = answers.outputs(logits)[0]
        if answers.on_source:  # a mask, boxes: on the posted file's own pixels
            answer = answers.source_answer(answer, data, contract.view(image))
        k, accept = min(s.options.topk, contract.num_classes), request.headers.get("accept", "")
        body, media = answers.http_answer(answer, k, accept)
        return JSONResponse(body) if media == "application/json" else Response(body, media_type=media)

    async def health(self, request: Request) -> JSONResponse:
        """``GET /health``: 200 once the workers run; 503 while starting or draining."""
        if self.service.state.draining:
            return JSONResponse({"status": "draining"}, 503)
        if not self.service.loaded:
            return JSONResponse({"status": "starting"}, 503)
        return JSONResponse({"status": "ok", "model": self.service.backend.path.name})

    async def info(self, request: Request) -> JSONResponse:
        """``GET /info``: the model's contract, the artifact and its verification; the server's options."""
        s = self.service
        if s.backend is None:
            return JSONResponse({"error": "the model is still loading; retry later"}, 503)
        if self.info_body is None:  # read once: the report beside the model does not change while it is served
            self.info_body = {"model": model_info(s.backend), "server": asdict(s.options)}
        return JSONResponse(self.info_body)

    async def stats(self, request: Request) -> JSONResponse:
        """``GET /stats``: requests by status and in flight, and the histogram of batch sizes."""
        return JSONResponse(self.service.state.summary(self.service.batch_sizes()))


def create_app(
    load: Callable[[], Sequence[Backend]],
    options: ServeOptions,
    model_name: str,
    on_ready: Callable[[], None] | None = None,
    on_failure: Callable[[BaseException], None] | None = None,
) -> Starlette:
    """The Starlette app serving the model ``load()`` returns (one backend per model worker, all the same model).

    The app answers from the start; ``load`` runs in a thread in the background. ``app.state.service`` holds
    the model, the batcher and the counters (:class:`~litstarter.extras.serve.service.Service`).

    Args:
        load: Loads the model, once per worker (``litstarter serve``: :func:`~.command.load_backends`).
        options: Batching, limits and the deadline.
        model_name: The model's name in the protocol routes.
        on_ready: Called once the model is loaded and the workers are started.
        on_failure: Called with the error if ``load`` raised (``litstarter serve`` then stops and reports it).
    """
    service = Service(options, model_name)
    routes, v2, count = Routes(service), ProtocolRoutes(service), service.metrics.counted

    async def load_then_start() -> None:
        try:
            await service.load(load)
        except BaseException as err:  # noqa: BLE001 - the command reports it; the probes stay "not ready"
            if on_failure is None or isinstance(err, asyncio.CancelledError):
                raise
            on_failure(err)
            return
        if on_ready is not None:
            on_ready()

    @asynccontextmanager
    async def lifespan(app: Starlette):
        loading = asyncio.create_task(load_then_start(), name="load-model")
        try:
            yield
        finally:
            loading.cancel()
            await asyncio.gather(loading, return_exceptions=True)
            await service.stop()

    table = [
        Route("/predict", count("/predict", routes.predict), methods=["POST"]),
        Route("/health", count("/health", routes.health), methods=["GET"]),
        Route("/info", count("/info", routes.info), methods=["GET"]),
        Route("/stats", count("/stats", routes.stats), methods=["GET"]),
        Route("/metrics", count("/metrics", service.metrics.endpoint), methods=["GET"]),
        Route("/v2", count("/v2", v2.server_metadata), methods=["GET"]),
        Route("/v2/health/live", count("/v2/health/live", v2.live), methods=["GET"]),
        Route("/v2/health/ready", count("/v2/health/ready", v2.ready), methods=["GET"]),
    ]
    for base in ("/v2/models/{name}", "/v2/models/{name}/versions/{version}"):
        table += [
            Route(base, count(base, v2.model_metadata), methods=["GET"]),
            Route(f"{base}/ready", count(f"{base}/ready", v2.model_ready), methods=["GET"]),
            Route(f"{base}/infer", count(f"{base}/infer", v2.infer), methods=["POST"]),
        ]
    unserved = {404: unserved_route, 405: unserved_route}  # {"error": ...}, as every other refusal
    app = Starlette(routes=table, lifespan=lifespan, exception_handlers=unserved)
    app.state.service = service
    return app
