"""What ``litstarter serve`` is told: batching, limits and the deadline. Standard library only, so that the
command's ``--help`` and option checks work before the serving dependencies are imported."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServeOptions:
    """How the server batches and what it accepts (the ``litstarter serve`` options of the same names).

    Args:
        max_batch_size: The most images in one forward pass.
        batch_timeout: Seconds a free worker waits for a batch to fill; 0 takes only what is already queued.
        workers: Model workers (model instances), each running one batch at a time.
        topk: Classes per answer, best first.
        request_timeout: Seconds from a request's arrival to its answer; past it the answer is a 504.
        max_pixels: Images with more pixels are refused (413) from their header, before decoding.
        max_bytes: Bodies with more bytes are refused (413).
        idle_timeout: Seconds a connection may stay open without sending a request (new, or after an answer).
        header_timeout: Seconds from a request's first byte to the end of its headers; past it: 408.
        max_connections: Connections open at once; past it a new one is answered 503 at once.
        drain_seconds: After SIGTERM, seconds of serving on with readiness 503 before the listener closes.
    """

    max_batch_size: int = 32
    batch_timeout: float = 0.0
    workers: int = 1
    topk: int = 5
    request_timeout: float = 30.0
    max_pixels: int = 40_000_000
    max_bytes: int = 20_000_000
    idle_timeout: float = 5.0
    header_timeout: float = 10.0
    max_connections: int = 1000
    drain_seconds: float = 0.0
