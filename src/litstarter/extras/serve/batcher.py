"""Dynamic batching for a server: requests wait in one queue; each model worker takes what is queued as a batch.

A worker that becomes free takes the first waiting request, then whatever else is already queued, up to
``max_batch_size``. With ``batch_timeout`` 0 it never waits for more: a lone client is served at once, and under
load batches grow by themselves, because requests pile up while the model runs. A ``batch_timeout`` above 0
waits up to that long for a batch to fill: more throughput at low load, for that much more latency.

The model runs in a thread (ONNX Runtime and torch release the GIL), so the event loop keeps reading and
decoding requests meanwhile. A request whose caller gave up (its deadline passed) is dropped before its
batch runs; one that is already running finishes, and its result is discarded.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

#: ``(B, C, H, W)`` uint8 in, one result per image out.
BatchFunction = Callable[[np.ndarray], Sequence[Any]]


@dataclass
class _Pending:
    image: np.ndarray  # (C, H, W) uint8
    future: asyncio.Future


class DynamicBatcher:
    """Batch single images from concurrent requests and run them on one or more model workers.

    Call :meth:`start` and :meth:`stop` inside the event loop that calls :meth:`submit`.

    Args:
        workers: One batch function per model worker (each typically holds its own model instance).
        max_batch_size: The most images one batch holds.
        batch_timeout: Seconds a worker waits for a batch to fill; 0 takes only what is already queued.
    """

    def __init__(self, workers: Sequence[BatchFunction], max_batch_size: int, batch_timeout: float = 0.0) -> None:
        if not workers or max_batch_size < 1 or batch_timeout < 0:
            raise ValueError(
                f"need >= 1 worker, max_batch_size >= 1 and batch_timeout >= 0; got {len(workers)} worker(s), "
                f"{max_batch_size}, {batch_timeout}"
            )
        self.workers = list(workers)
        self.max_batch_size = max_batch_size
        self.batch_timeout = batch_timeout
        #: Batch size -> how many batches of that size ran.
        self.batch_sizes: Counter[int] = Counter()
        self._queue: asyncio.Queue[_Pending] | None = None
        self._tasks: list[asyncio.Task] = []
        self._executor: ThreadPoolExecutor | None = None

    @property
    def running(self) -> bool:
        """Whether the workers are started."""
        return bool(self._tasks)

    @property
    def queued(self) -> int:
        """Images waiting for a worker."""
        return self._queue.qsize() if self._queue is not None else 0

    async def start(self) -> None:
        """Start one task per worker, each running its model in its own thread."""
        self._queue = asyncio.Queue()
        self._executor = ThreadPoolExecutor(len(self.workers), thread_name_prefix="model-worker")
        self._tasks = [
            asyncio.create_task(self._work(run), name=f"model-worker-{i}") for i, run in enumerate(self.workers)
        ]

    async def stop(self) -> None:
        """Stop the workers (a batch already running finishes first)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    async def submit(self, image: np.ndarray) -> Any:
        """Queue one ``(C, H, W)`` uint8 image and wait for its result.

        Cancelling the caller (e.g. a deadline) drops the image if its batch has not started yet.

        Raises:
            RuntimeError: If the batcher is not started.
            Exception: Whatever the model raised on the batch this image was in.
        """
        if self._queue is None or not self._tasks:
            raise RuntimeError("the batcher is not started")
        future = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Pending(image, future))
        return await future

    async def _collect(self) -> list[_Pending]:
        """Wait for one request, then take what is queued (waiting up to ``batch_timeout`` for more)."""
        loop = asyncio.get_running_loop()
        batch = [await self._queue.get()]
        deadline = loop.time() + self.batch_timeout
        while len(batch) < self.max_batch_size:
            if not self._queue.empty():
                batch.append(self._queue.get_nowait())
                continue
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            # asyncio.wait, not wait_for: a get that is cancelled here leaves its item in the queue.
            getter = asyncio.ensure_future(self._queue.get())
            done, _ = await asyncio.wait({getter}, timeout=remaining)
            if getter not in done:
                getter.cancel()
                break
            batch.append(getter.result())
        return [p for p in batch if not p.future.done()]  # a caller that gave up is not computed for

    async def _work(self, run: BatchFunction) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._collect()
            if not batch:
                continue
            images = np.stack([p.image for p in batch])  # (B, C, H, W) uint8
            try:
                results = await loop.run_in_executor(self._executor, run, images)
            except Exception as err:  # the model failed on this batch: its requests get the error, the rest go on
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(err)
                continue
            self.batch_sizes[len(batch)] += 1
            for p, result in zip(batch, results, strict=True):
                if not p.future.done():
                    p.future.set_result(result)
