"""What every route of ``litstarter serve`` shares: the model once loaded, the batcher, the counters, the deadline.

The server answers before the model is in: :meth:`Service.load` runs in the background (started by the app's
lifespan), and until it is done the probes say "not ready" (503) and predictions are refused 503. Then
:meth:`Service.guarded` runs each prediction request under one deadline (``--request_timeout``) and turns every
failure into that request's own answer: a 4xx for what the client sent, 504 past the deadline, 500 when the
model itself failed on the batch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
from starlette.responses import JSONResponse, Response

from litstarter.extras.deploy.backends import Backend
from litstarter.extras.serve.batcher import DynamicBatcher
from litstarter.extras.serve.metrics import Metrics
from litstarter.extras.serve.options import ServeOptions
from litstarter.extras.serve.request import DISCARD_LIMIT, DISCARD_SECONDS, Body, RequestError

logger = logging.getLogger("litstarter.extras.serve.command")


class ServerState:
    """Counters for ``/stats`` and the shutdown log line, and whether the server is draining."""

    def __init__(self) -> None:
        self.by_status: Counter[int] = Counter()
        self.received = 0
        self.in_flight = 0
        self.draining = False

    def summary(self, batch_sizes: Counter[int]) -> dict:
        """The ``/stats`` body, given the batcher's histogram of batch sizes."""
        sizes = dict(sorted(batch_sizes.items()))
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


def error(status: int, message: str, close: bool = False) -> JSONResponse:
    """``{"error": message}``; ``close`` ends the connection (its body may be unread)."""
    return JSONResponse({"error": message}, status, headers={"Connection": "close"} if close else None)


class Service:
    """The model (once loaded), its batcher, the counters and the metrics, shared by all routes.

    Args:
        options: Batching, limits and the deadline.
        model_name: The model's name in the protocol routes (``/v2/models/{name}``).
    """

    def __init__(self, options: ServeOptions, model_name: str) -> None:
        self.options = options
        self.model_name = model_name
        self.state = ServerState()
        self.backend: Backend | None = None
        self.batcher: DynamicBatcher | None = None
        self.metrics = Metrics(
            options.max_batch_size, self.queue_depth, lambda: self.state.in_flight, lambda: self.ready
        )

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded and its workers run."""
        return self.batcher is not None and self.batcher.running

    @property
    def ready(self) -> bool:
        """Loaded, and not draining: what the readiness probes answer."""
        return self.loaded and not self.state.draining

    def queue_depth(self) -> int:
        """Images waiting for a worker."""
        return self.batcher.queued if self.batcher is not None else 0

    def batch_sizes(self) -> Counter[int]:
        """Batch size -> batches of that size run so far."""
        return self.batcher.batch_sizes if self.batcher is not None else Counter()

    def _worker(self, model: Backend) -> Callable[[np.ndarray], list[np.ndarray]]:
        def run(images: np.ndarray) -> list[np.ndarray]:  # (B, C, H, W) uint8 -> B rows of (K,) logits
            started = time.perf_counter()
            logits = model(images)
            self.metrics.batch(len(images), time.perf_counter() - started)
            return list(logits)

        return run

    async def load(self, load: Callable[[], Sequence[Backend]]) -> None:
        """Load the model in a thread (the event loop answers probes meanwhile), then start the workers."""
        backends = await asyncio.get_running_loop().run_in_executor(None, load)
        self.backend = backends[0]
        o = self.options
        batcher = DynamicBatcher([self._worker(b) for b in backends], o.max_batch_size, o.batch_timeout)
        await batcher.start()
        self.batcher = batcher

    async def stop(self) -> None:
        """Stop the workers, if they were started."""
        if self.batcher is not None:
            await self.batcher.stop()

    async def predict(self, images: np.ndarray) -> list[np.ndarray]:
        """Logits ``(K,)`` per image of ``(B, C, H, W)`` uint8, each image through the batcher on its own."""
        return list(await asyncio.gather(*(self.batcher.submit(image) for image in images)))

    async def guarded(self, body: Body, work: Callable[[], Awaitable[Response]]) -> Response:
        """Answer one prediction request with ``work()`` under the deadline; every failure is this request's alone."""
        self.state.received += 1
        self.state.in_flight += 1
        try:
            if not self.loaded:
                reason = "the server is shutting down" if self.state.draining else "the model is still loading"
                raise RequestError(503, f"{reason}; retry later")
            response = await asyncio.wait_for(work(), self.options.request_timeout)
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

    async def _refuse(self, body: Body, status: int, message: str) -> JSONResponse:
        try:
            ended = await asyncio.wait_for(body.discard(DISCARD_LIMIT), DISCARD_SECONDS)
        except asyncio.TimeoutError:
            ended = False
        return error(status, message, close=not ended)
