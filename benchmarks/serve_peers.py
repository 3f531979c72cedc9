"""`litstarter serve` against a peer, LitServe, on the same model, bodies and client.

    python3 -m venv /tmp/litserve-venv
    /tmp/litserve-venv/bin/pip install litserve python-multipart onnxruntime pillow numpy
    .venv/bin/python benchmarks/serve_peers.py --peer_python /tmp/litserve-venv/bin/python \\
        [--requests 1000] [--rounds 3] [--concurrency 32] [--smoke]

LitServe lives in a venv of its own (``--peer_python``, or ``$LITSERVE_PYTHON``), never in the project's
dependencies. The model is ``benchmarks/serve.py``'s: a randomly initialised ``resnet18`` (3 x 64 x 64, 10
classes) exported to ONNX. Ours is ``litstarter serve --max_batch_size 32 --batch_timeout 0``; the peer,
``benchmarks/serve_peer_litserve.py``, does the same work per request (Pillow decode, RGB, 64 x 64, batches of up
to 32 with no wait, the same onnxruntime session options, the top 5 as JSON), with one worker.

Bodies, the same 64 x 64 JPEG in each:

- ``jpeg``: ours takes the raw file (``Content-Type: image/jpeg``); LitServe has no route for raw bytes, so it gets
  the file as a multipart form (``image``), its way of taking a file;
- ``json``: ``{"image": "<base64>"}`` to both;
- ``v2``: Open Inference Protocol binary tensors (``UINT8 [1, 3, 64, 64]``): ours only, LitServe has no such route.

The client is ``benchmarks/serve.py``'s closed loop on raw keep-alive connections, ``--concurrency`` requests in
flight. Each round measures every body kind on both servers, the order alternating round by round (ours first,
then the peer first), so that a busy neighbour slows both alike; the server not being measured is frozen
(SIGSTOP), since LitServe's idle inference loop polls its queue and takes CPU from the other. Printed per kind:
the median round's requests per second, p50 and p99 latency of each, and ours / the peer's (req/s; p99 the other
way up: above 1 is ours better).
Target (issue "ahead of the serving peers"): ours >= 1.1x LitServe's req/s on each kind, with p99 no worse.

``--smoke`` (20 requests a cell, one round, concurrency 4: seconds) runs the same code end to end and prints the
same table; the test suite runs it. Without LitServe's venv (no ``--peer_python`` or ``$LITSERVE_PYTHON``, or one
that cannot import what the peer needs) the smoke says so in one line and exits 0: the suite reports it skipped and
downloads nothing; a full run stops there instead.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
from serve import IMAGE_SIZE, REPO, closed_loop, export_resnet18, jpeg_request, start_server

PEER = Path(__file__).with_name("serve_peer_litserve.py")
BOUNDARY = "litstarterbenchmarkboundary"


def http_request(host: str, port: int, path: str, kind: str, body: bytes, extra: str = "") -> bytes:
    """One whole HTTP/1.1 keep-alive request."""
    head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {kind}\r\n{extra}"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def bodies(host: str, port: int, ours: bool) -> dict[str, bytes]:
    """The requests of each body kind for one server (``v2`` for ours only)."""
    raw = jpeg_request(host, port)
    jpeg = raw[raw.index(b"\r\n\r\n") + 4 :]
    as_json = json.dumps({"image": base64.b64encode(jpeg).decode()}).encode()
    requests = {"json": http_request(host, port, "/predict", "application/json", as_json)}
    if ours:
        requests["jpeg"] = raw
        pixels = np.random.default_rng(0).integers(0, 255, (1, 3, IMAGE_SIZE, IMAGE_SIZE), dtype=np.uint8).tobytes()
        tensor = {"name": "input", "datatype": "UINT8", "shape": [1, 3, IMAGE_SIZE, IMAGE_SIZE]}
        tensor["parameters"] = {"binary_data_size": len(pixels)}
        wanted = [{"name": "probabilities", "parameters": {"binary_data": True}}]
        header = json.dumps({"inputs": [tensor], "outputs": wanted}).encode()
        extra = f"Inference-Header-Content-Length: {len(header)}\r\n"
        requests["v2"] = http_request(
            host, port, "/v2/models/model/infer", "application/octet-stream", header + pixels, extra
        )
    else:
        form = (
            (
                f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="image.jpg"\r\n'
                f"Content-Type: image/jpeg\r\n\r\n"
            ).encode()
            + jpeg
            + f"\r\n--{BOUNDARY}--\r\n".encode()
        )
        requests["jpeg"] = http_request(host, port, "/predict", f"multipart/form-data; boundary={BOUNDARY}", form)
    return requests


def peer_missing(python: str | None) -> str | None:
    """Why ``python`` cannot run the peer, in a few words (``None``: it can)."""
    if not python:
        return "no --peer_python or $LITSERVE_PYTHON"
    try:
        imports = "import litserve, onnxruntime, PIL, numpy"
        done = subprocess.run([python, "-c", imports], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{python} does not run ({type(err).__name__})"
    return f"{python} cannot import litserve, onnxruntime, PIL and numpy" if done.returncode else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_peer(python: str, model: Path, timeout: float = 180) -> tuple[subprocess.Popen, str, int]:
    """LitServe on a free loopback port; returns once its ``/health`` answers 200."""
    port = free_port()
    proc = subprocess.Popen([python, str(PEER), str(model), str(port)], cwd=REPO, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"LitServe exited with {proc.returncode} before it answered")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                if answer.status == 200:
                    return proc, "127.0.0.1", port
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"LitServe did not answer /health within {timeout:g} s")


def measure(host: str, port: int, request: bytes, concurrency: int, total: int) -> dict:
    """One cell: requests per second, p50 and p99 (ms) of ``total`` requests, ``concurrency`` in flight."""
    started = time.perf_counter()
    latencies = sorted(asyncio.run(closed_loop(host, port, request, concurrency, total)))
    wall = time.perf_counter() - started
    return {
        "rps": total / wall,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    }


def let_run(servers: dict, active: str | None) -> None:
    """Freeze every server but ``active`` (SIGSTOP; ``None``: thaw all): LitServe's idle inference loop polls its
    queue (about half a core of 2 here), which would take from the server being measured."""
    for name, (proc, _, _) in servers.items():
        sig = signal.SIGCONT if active in (None, name) else signal.SIGSTOP
        if name == "litserve":
            os.killpg(proc.pid, sig)  # its session: the API server and the inference worker
        else:
            os.kill(proc.pid, sig)


def run_rounds(servers: dict, args: argparse.Namespace) -> dict[tuple[str, str], list[dict]]:
    """Every body kind on every server, ``--rounds`` times, the servers' order alternating by round."""
    cells: dict[tuple[str, str], list[dict]] = {}
    requests = {name: bodies(host, port, name == "ours") for name, (_, host, port) in servers.items()}
    for name, (_, host, port) in servers.items():  # warm-up: sessions, allocators, connection setup
        let_run(servers, name)
        for request in requests[name].values():
            measure(host, port, request, args.concurrency, min(args.requests, 200))
    for round_index in range(args.rounds):
        order = list(servers) if round_index % 2 == 0 else list(reversed(servers))
        for kind in ("jpeg", "json", "v2"):
            for name in order:
                if kind in requests[name]:
                    _, host, port = servers[name]
                    let_run(servers, name)
                    cell = measure(host, port, requests[name][kind], args.concurrency, args.requests)
                    cells.setdefault((kind, name), []).append(cell)
                    print(f"round {round_index + 1} {kind:<5} {name:<9} {cell['rps']:8.1f} req/s", flush=True)
    return cells


def median_round(rounds: list[dict]) -> dict:
    """The round with the median requests per second (its own p50 and p99 beside it)."""
    ranked = sorted(rounds, key=lambda cell: cell["rps"])
    return ranked[len(ranked) // 2]


def report(cells: dict[tuple[str, str], list[dict]], args: argparse.Namespace) -> None:
    print(f"\nc={args.concurrency}, {args.requests} requests a cell, median of {args.rounds} round(s)")
    print(f"{'body':<6}{'server':<10}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}  {'p99 peer/ours':<15}ours/peer req/s")
    for kind in ("jpeg", "json", "v2"):
        ours, peer = cells.get((kind, "ours")), cells.get((kind, "litserve"))
        for name, rounds in (("ours", ours), ("litserve", peer)):
            if rounds is None:
                continue
            m = median_round(rounds)
            ratio = p99 = ""
            if name == "ours" and peer is not None:
                ratios = [o["rps"] / p["rps"] for o, p in zip(ours, peer, strict=True)]
                ratio = f"{statistics.median(ratios):.2f}x ({', '.join(f'{r:.2f}' for r in ratios)})"
                p99 = f"{median_round(peer)['p99_ms'] / m['p99_ms']:.2f}x"
            print(f"{kind:<6}{name:<10}{m['rps']:9.1f}{m['p50_ms']:9.2f}{m['p99_ms']:9.2f}  {p99:<15}{ratio}")
        if peer is None:
            print(f"{kind:<6}{'litserve':<10}  (no route for this body)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer_python", default=os.environ.get("LITSERVE_PYTHON"), help="The LitServe venv's python.")
    parser.add_argument("--requests", type=int, default=1000, help="Requests per cell.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: 20 requests, 1 round, c=4")
    args = parser.parse_args()
    if args.smoke:
        args.requests, args.rounds, args.concurrency = 20, 1, 4
    missing = peer_missing(args.peer_python)
    if missing:
        why = f"LitServe is not installed here ({missing}; this script's docstring makes its venv)"
        if args.smoke:
            print(f"serve_peers.py: skipped: {why}")
            return
        sys.exit(f"serve_peers.py: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "model.onnx"
        export_resnet18(model)
        servers = {"ours": start_server(model, 32), "litserve": start_peer(args.peer_python, model)}
        try:
            cells = run_rounds(servers, args)
        finally:
            let_run(servers, None)
            servers["ours"][0].terminate()
            os.killpg(servers["litserve"][0].pid, signal.SIGTERM)  # its session: LitServe's workers with it
            for proc, _, _ in servers.values():
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    report(cells, args)


if __name__ == "__main__":
    main()
