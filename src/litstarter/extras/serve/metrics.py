"""``GET /metrics``: the server's counters in Prometheus' text format, through ``prometheus_client``.

| metric | kind | what |
| --- | --- | --- |
| ``litstarter_requests_total{route, status}`` | counter | requests answered, by route template and status |
| ``litstarter_request_duration_seconds{route}`` | histogram | arrival to answer, per route |
| ``litstarter_requests_timed_out_total`` | counter | requests answered 504 (past ``--request_timeout``) |
| ``litstarter_batch_size`` | histogram | images per batch the model ran (``_sum``: images, ``_count``: batches) |
| ``litstarter_inference_seconds`` | histogram | the model's time per batch |
| ``litstarter_queue_depth`` | gauge | images waiting for a worker |
| ``litstarter_requests_in_flight`` | gauge | requests being answered |
| ``litstarter_ready`` | gauge | 1 when the model is loaded and the server is not draining |

``--workers N`` runs N model instances on threads of one process, so one registry in that process sees every
count, and ``prometheus_client``'s metrics are thread-safe: no multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``)
is needed. Each app gets its own registry, not the library's global one, so two servers in one process (tests)
count apart. Several replicas are several scrape targets, summed by Prometheus.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.requests import Request
from starlette.responses import Response

Handler = Callable[[Request], Awaitable[Response]]
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def batch_buckets(max_batch_size: int) -> tuple[float, ...]:
    """Powers of two up to ``max_batch_size``, and ``max_batch_size`` itself: 1, 2, 4, ..., max."""
    buckets, size = [], 1
    while size < max_batch_size:
        buckets.append(float(size))
        size *= 2
    return (*buckets, float(max_batch_size))


class Metrics:
    """The server's Prometheus metrics, in a registry of their own.

    Args:
        max_batch_size: The largest batch, the top bucket of the batch-size histogram.
        queue_depth: Returns the images waiting for a worker now.
        in_flight: Returns the requests being answered now.
        ready: Returns whether the server is ready.
    """

    def __init__(
        self,
        max_batch_size: int,
        queue_depth: Callable[[], int],
        in_flight: Callable[[], int],
        ready: Callable[[], bool],
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "litstarter_requests", "Requests answered, by route and status.", ["route", "status"], registry=r
        )
        self.latency = Histogram(
            "litstarter_request_duration_seconds",
            "Seconds from arrival to answer.",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.timed_out = Counter(
            "litstarter_requests_timed_out", "Requests answered 504 (--request_timeout).", registry=r
        )
        self.batch_size = Histogram(
            "litstarter_batch_size",
            "Images per batch the model ran.",
            buckets=batch_buckets(max_batch_size),
            registry=r,
        )
        self.inference = Histogram(
            "litstarter_inference_seconds", "The model's seconds per batch.", buckets=LATENCY_BUCKETS, registry=r
        )
        Gauge("litstarter_queue_depth", "Images waiting for a worker.", registry=r).set_function(queue_depth)
        Gauge("litstarter_requests_in_flight", "Requests being answered.", registry=r).set_function(in_flight)
        Gauge("litstarter_ready", "1 when the model is loaded and not draining.", registry=r).set_function(
            lambda: float(ready())
        )

    def batch(self, size: int, seconds: float) -> None:
        """One batch of ``size`` images ran in ``seconds`` (called from the worker threads)."""
        self.batch_size.observe(size)
        self.inference.observe(seconds)

    def counted(self, route: str, handler: Handler) -> Handler:
        """``handler`` with its answers counted under the route template ``route`` (never the path: bounded labels)."""

        async def counted_handler(request: Request) -> Response:
            started = time.perf_counter()
            try:
                response = await handler(request)
            except Exception:
                self.requests.labels(route, "500").inc()
                raise
            self.latency.labels(route).observe(time.perf_counter() - started)
            self.requests.labels(route, str(response.status_code)).inc()
            if response.status_code == 504:
                self.timed_out.inc()
            return response

        return counted_handler

    async def endpoint(self, request: Request) -> Response:
        """``GET /metrics``."""
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)
