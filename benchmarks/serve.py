"""`litstarter serve` under load: dynamic batching against no batching, side by side in one run.

    .venv/bin/python benchmarks/serve.py [--requests 400] [--rounds 3] [--concurrency 1 8 32] [--smoke]

Exports a randomly initialised ``resnet18`` (3 x 64 x 64, 10 classes) to ONNX the way ``litstarter export``
does, then starts two servers on loopback: one with ``--max_batch_size 32`` and one with ``--max_batch_size 1``
(no batching), both with ``--batch_timeout 0``. A closed-loop client keeps ``concurrency`` requests in flight
(each connection sends its next request as soon as its answer arrives) until ``--requests`` have been answered,
always the same 64 x 64 JPEG as a raw ``image/jpeg`` body. Rounds interleave the two servers, so a busy
neighbour on a shared machine slows both alike; the table shows the median round.

Printed per concurrency and server: requests per second, p50 and p99 latency, and the client's share of the
CPU time (client / (client + server)): client and server share the machine's cores, so a client that eats
half of them caps what the server can show. The protocol route (``POST /v2/models/model/infer``) is measured
too, on the batching server at the highest concurrency: ``tritonclient`` keeps that many one-image ``UINT8``
tensors in flight (binary tensors, its default). It has no target: tritonclient's own CPU share is printed.

The model alone (no HTTP) is timed after the servers, in the same run, at batch 1, 32 and the mean batch the
batching server formed at the highest concurrency. Target: there, the server's requests per second are at least
0.9x the model alone's images per second at that mean batch (the server adds at most 10% to the model); the
ratio at batch 32 is printed beside it. Printed for information: batching's gain over no batching at the highest
concurrency (the model's own gain from batching differs from machine to machine), and at concurrency 1 batching's
p50 against no batching's (target <= 1.3x).

The client is a few lines of asyncio on raw HTTP/1.1 keep-alive connections rather than httpx: a heavier
client would take the CPU the server needs. ``--smoke`` (20 requests a cell, one round, concurrency 1 and 4, the
model alone timed for 0.2 s a batch size: seconds) runs the same code end to end and prints the same table; the test
suite runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
READY = re.compile(r" on http://([\d.]+):(\d+) ")
IMAGE_SIZE = 64


def export_resnet18(path: Path) -> None:
    """``resnet18`` (random init) with a 10-class head, 3 x 64 x 64 uint8 in, to ONNX with its contract embedded."""
    import torch

    from litstarter.extras.deploy.contract import ModelContract
    from litstarter.extras.deploy.writers import write_onnx
    from litstarter.models.classifier import build_classifier

    architecture = {"backbone": "resnet18", "backbone_kwargs": {}, "num_classes": 10, "in_channels": 3, "dropout": 0}
    net = build_classifier(architecture).eval()
    contract = ModelContract(
        class_names=[f"class_{i}" for i in range(10)],
        channels=3,
        image_size=(IMAGE_SIZE, IMAGE_SIZE),
        resize_size=(IMAGE_SIZE, IMAGE_SIZE),
        mean=[0.5] * 3,
        std=[0.25] * 3,
        architecture=architecture,
    )
    example = torch.zeros(2, 3, IMAGE_SIZE, IMAGE_SIZE, dtype=torch.uint8)
    write_onnx(net, path, contract, example)


def model_alone(backend, sizes: list[int], seconds: float = 2.0) -> dict[int, float]:
    """Milliseconds per image of the model alone (no HTTP) at each batch size (the servers idle meanwhile).

    A server that batches well spends its time in the model: at the batch sizes it forms, the model alone is its
    ceiling, measured in the same run.
    """
    per_image = {}
    for size in sorted(set(sizes)):
        images = np.random.default_rng(0).integers(0, 255, (size, 3, IMAGE_SIZE, IMAGE_SIZE), dtype=np.uint8)
        backend(images)
        times, started = [], time.perf_counter()
        while time.perf_counter() - started < seconds:
            tick = time.perf_counter()
            backend(images)
            times.append(time.perf_counter() - tick)
        per_image[size] = 1000 * statistics.median(times) / size
    return per_image


def jpeg_request(host: str, port: int) -> bytes:
    """One whole ``POST /predict`` request: a 64 x 64 JPEG of smooth random colours, as raw bytes."""
    rng = np.random.default_rng(0)
    small = Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8))
    buffer = io.BytesIO()
    small.resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.BILINEAR).save(buffer, format="JPEG", quality=90)
    body = buffer.getvalue()
    head = (
        f"POST /predict HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: image/jpeg\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def closed_loop(host: str, port: int, request: bytes, concurrency: int, total: int) -> list[float]:
    """Keep ``concurrency`` requests in flight until ``total`` are answered; return each one's latency (s)."""
    counter = itertools.count()
    latencies: list[float] = []

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while next(counter) < total:
                started = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(re.search(rb"(?im)^content-length: *(\d+)", head).group(1))  # not Inference-Header-...
                body = await reader.readexactly(length)
                latencies.append(time.perf_counter() - started)
                if not head.startswith(b"HTTP/1.1 200"):
                    raise RuntimeError(f"the server answered {head.splitlines()[0]!r}: {body[:200]!r}")
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return latencies


async def triton_loop(host: str, port: int, concurrency: int, total: int) -> list[float]:
    """tritonclient keeps ``concurrency`` one-image UINT8 requests in flight until ``total`` are answered.

    tritonclient's asyncio client (``tritonclient.http.aio``), one coroutine per connection, each sending its
    next request as soon as its answer arrives: the same closed loop as the raw route's. Returns each request's
    latency (s).
    """
    import tritonclient.http.aio as triton_aio

    image = np.random.default_rng(0).integers(0, 255, (1, 3, IMAGE_SIZE, IMAGE_SIZE), dtype=np.uint8)
    tensor = triton_aio.InferInput("input", list(image.shape), "UINT8")
    tensor.set_data_from_numpy(image)  # binary, tritonclient's default
    outputs = [triton_aio.InferRequestedOutput("probabilities")]
    counter, latencies = itertools.count(), []
    client = triton_aio.InferenceServerClient(f"{host}:{port}", conn_limit=concurrency)

    async def connection() -> None:
        while next(counter) < total:
            started = time.perf_counter()
            await client.infer("model", [tensor], outputs=outputs)  # raises on an error answer
            latencies.append(time.perf_counter() - started)

    try:
        await asyncio.gather(*(connection() for _ in range(concurrency)))
    finally:
        await client.close()
    return latencies


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def start_server(model: Path, max_batch_size: int) -> tuple[subprocess.Popen, str, int]:
    """``litstarter serve`` on a free loopback port; returns the process, host and port once it is ready."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "litstarter", "serve", "--model", str(model), "--port", "0"]
        + ["--max_batch_size", str(max_batch_size), "--batch_timeout", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    for line in proc.stdout:
        match = READY.search(line)
        if match:
            return proc, match.group(1), int(match.group(2))
    raise RuntimeError(f"the server (max_batch_size {max_batch_size}) did not start")


def batches(host: str, port: int) -> tuple[int, int]:
    """``(batches run, images in them)`` so far, from the server's ``/stats``."""
    with urllib.request.urlopen(f"http://{host}:{port}/stats", timeout=30) as response:
        stats = json.load(response)["batches"]
    return stats["count"], stats["images"]


def measure(server: tuple[subprocess.Popen, str, int], request: bytes | None, concurrency: int, total: int) -> dict:
    """One cell: ``request`` (raw HTTP) in a closed loop, or tritonclient's protocol loop when it is ``None``."""
    proc, host, port = server
    batches_before = batches(host, port)
    client_before, server_before, started = own_cpu_seconds(), cpu_seconds(proc.pid), time.perf_counter()
    if request is None:
        latencies = asyncio.run(triton_loop(host, port, concurrency, total))
    else:
        latencies = asyncio.run(closed_loop(host, port, request, concurrency, total))
    wall = time.perf_counter() - started
    client = own_cpu_seconds() - client_before
    served = cpu_seconds(proc.pid) - server_before
    latencies.sort()
    count, images = (after - before for after, before in zip(batches(host, port), batches_before, strict=True))
    return {
        "mean_batch": images / max(count, 1),
        "rps": total / wall,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "client_share": client / max(client + served, 1e-9),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="Requests per measurement.")
    parser.add_argument("--rounds", type=int, default=3, help="Interleaved rounds; the median is shown.")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--model_seconds", type=float, default=2.0, help="Seconds the model alone runs per batch size.")
    parser.add_argument("--smoke", action="store_true", help="A quick end-to-end check: 20 requests, 1 round, c=1, 4.")
    args = parser.parse_args()
    if args.smoke:
        args.requests, args.rounds, args.concurrency, args.model_seconds = 20, 1, [1, 4], 0.2

    from litstarter.extras.serve.command import load_backends

    top = max(args.concurrency)
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "model.onnx"
        export_resnet18(model)
        backend = load_backends(str(model), workers=1, num_threads=None)[0]  # what `litstarter serve` uses
        servers = {size: start_server(model, size) for size in (32, 1)}
        try:
            request = {size: jpeg_request(host, port) for size, (_, host, port) in servers.items()}
            warmup = min(100, args.requests)
            for size, server in servers.items():  # warm up: thread pools, allocator, ORT's first runs
                measure(server, request[size], 8, warmup)
            measure(servers[32], None, 8, warmup)
            runs: dict = {}
            for _ in range(args.rounds):
                for concurrency in args.concurrency:
                    for size, server in servers.items():
                        runs.setdefault((concurrency, size), []).append(
                            measure(server, request[size], concurrency, args.requests)
                        )
                # The model alone right after the server's cell, at the batch it formed: a busy neighbour on a
                # shared machine then slows both alike.
                runs.setdefault("alone", []).append(against_model(backend, runs[(top, 32)][-1], args.model_seconds))
                runs.setdefault("protocol", []).append(measure(servers[32], None, top, args.requests))
        finally:
            for proc, _, _ in servers.values():
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)
    report(args, runs)


def against_model(backend, cell: dict, seconds: float) -> dict:
    """The server's cell against the model alone, timed now (``seconds`` a batch size), at the mean batch the server
    formed and at 32."""
    formed = max(1, round(cell["mean_batch"]))
    alone = model_alone(backend, [1, formed, 32], seconds)
    return {
        "at_mean": cell["rps"] * alone[formed] / 1000,  # req/s over the model's images/s at that batch
        "at_32": cell["rps"] * alone[32] / 1000,
        "gain": alone[1] / alone[32],
        "formed": formed,
        **{"ms_1": alone[1], "ms_mean": alone[formed], "ms_32": alone[32]},
    }


def report(args: argparse.Namespace, runs: dict) -> None:
    """Print the table and the targets."""
    top, low = max(args.concurrency), min(args.concurrency)

    def median(cell, key: str) -> float:
        return statistics.median(run[key] for run in runs[cell])

    print(
        f"resnet18, ONNX Runtime, {IMAGE_SIZE}x{IMAGE_SIZE} JPEG bodies, {args.requests} requests per cell, "
        f"median of {args.rounds} rounds, {os.cpu_count()} cores shared by client and server"
    )
    print(
        f"{'route':>9}  {'concurrency':>11}  {'max_batch_size':>14}  {'req/s':>7}  {'p50 ms':>7}  {'p99 ms':>7}  "
        f"{'mean batch':>10}  {'client CPU':>10}"
    )
    cells = [("/predict", c, size, (c, size)) for c in args.concurrency for size in (32, 1)]
    for route, concurrency, size, cell in [*cells, ("/v2 infer", top, 32, "protocol")]:
        print(
            f"{route:>9}  {concurrency:>11}  {size:>14}  {median(cell, 'rps'):>7.1f}  {median(cell, 'p50_ms'):>7.2f}  "
            f"{median(cell, 'p99_ms'):>7.2f}  {median(cell, 'mean_batch'):>10.1f}  "
            f"{100 * median(cell, 'client_share'):>9.0f}%"
        )
    rps = median((top, 32), "rps")
    for i, alone in enumerate(runs["alone"], start=1):
        print(
            f"round {i}: the model alone (no HTTP) {alone['ms_1']:.2f} ms/image at batch 1, "
            f"{alone['ms_mean']:.2f} at batch {alone['formed']} (the server's mean batch), "
            f"{alone['ms_32']:.2f} at batch 32 (batching can give at most {alone['gain']:.2f}x); the server's "
            f"req/s at concurrency {top} = {alone['at_mean']:.2f}x the model alone at its mean batch, "
            f"{alone['at_32']:.2f}x at batch 32"
        )
    print(
        f"concurrency {top}, batching (median of rounds): the server's requests/s are "
        f"{median('alone', 'at_mean'):.2f}x the model alone's images/s at the mean batch it formed "
        f"({median((top, 32), 'mean_batch'):.1f}; target >= 0.9), {median('alone', 'at_32'):.2f}x at batch 32"
    )
    speedup = rps / median((top, 1), "rps")
    lone = median((low, 32), "p50_ms") / median((low, 1), "p50_ms")
    print(f"concurrency {top}: batching gives {speedup:.2f}x the requests/s of no batching (for information)")
    print(f"concurrency {low}: batching's p50 is {lone:.2f}x no batching's (target <= 1.3)")
    protocol = median("protocol", "rps")
    print(
        f"protocol route, tritonclient at concurrency {top} (UINT8 tensors, binary): {protocol:.1f} req/s, "
        f"client CPU share {100 * median('protocol', 'client_share'):.0f}% (no target: the client shares the cores)"
    )


if __name__ == "__main__":
    main()
