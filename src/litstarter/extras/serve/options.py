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
    """

    max_batch_size: int = 32
    batch_timeout: float = 0.0
    workers: int = 1
    topk: int = 5
    request_timeout: float = 30.0
    max_pixels: int = 40_000_000
    max_bytes: int = 20_000_000
