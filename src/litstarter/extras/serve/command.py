"""``litstarter serve``: answer HTTP requests with any artifact, batching concurrent requests on the server.

Usage::

    litstarter serve --model runs/digits/version_0/export/model.onnx --port 8000
    curl -s -X POST -H "Content-Type: image/png" --data-binary @digit.png http://127.0.0.1:8000/predict

It takes what ``litstarter infer`` takes (``.ckpt``, ``weights.pt``, ``model.ts``, ``model.pt2``, ``.onnx``)
through the same backends, contract and preprocessing. With an ``.onnx`` model it imports neither torch nor
Lightning. It answers from the start and loads the model in the background (readiness 503 until then). On
SIGTERM (or Ctrl+C) readiness turns 503, it serves ``--drain_seconds`` more, stops accepting connections,
answers every request it has accepted, and exits 0 (:mod:`litstarter.extras.serve.shutdown`). The routes are in
:mod:`litstarter.extras.serve.app` (the protocol's in :mod:`litstarter.extras.serve.v2`), the request checks in
:mod:`litstarter.extras.serve.request`, the batching in :mod:`litstarter.extras.serve.batcher`.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import re
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from litstarter._engine.arguments import ArgumentParser
from litstarter._engine.cores import available_cores
from litstarter.errors import BadInputError, UsageError
from litstarter.extras.deploy.backends import Backend, open_model
from litstarter.extras.serve.options import ServeOptions

#: What serving needs beyond infer's dependencies: the ``serve`` extra.
SERVE_EXTRA = ("starlette", "uvicorn", "prometheus_client")

#: Seconds the drain may take beyond the longest request (the deadline bounds every request).
DRAIN_MARGIN = 5.0

#: Open files the server needs beyond one per connection: the model, thread pools, the listener, the event loop.
DESCRIPTOR_RESERVE = 128


#: The batching, limit and thread options: (flag, type, help); defaults come from ServeOptions (None if absent).
TUNING = [
    ("--max_batch_size", int, "Most images per forward pass."),
    ("--batch_timeout", float, "Seconds a free worker waits for a batch to fill; 0 batches only what is queued."),
    ("--workers", int, "Model workers (instances) running batches."),
    ("--topk", int, "Classes (with probabilities) per answer."),
    (
        "--request_timeout",
        float,
        "Seconds from arrival to answer (reading, decoding, queueing, predicting); past it: 504.",
    ),
    ("--max_pixels", int, "Refuse images with more pixels (413)."),
    ("--max_bytes", int, "Refuse bodies with more bytes (413)."),
    ("--idle_timeout", float, "Close a connection that sends no request this many seconds (new, or after an answer)."),
    ("--header_timeout", float, "Seconds from a request's first byte to the end of its headers; past it: 408, closed."),
    ("--max_connections", int, "Connections open at once; past it a new one gets 503 at once (idle ones count)."),
    ("--num_threads", int, "Intra-op threads per worker; default: the usable cores divided among the workers."),
    (
        "--drain_seconds",
        float,
        "After SIGTERM, keep serving this long with readiness 503 (liveness 200) before the listener closes: "
        "the time the load balancers need to stop sending (replaces a preStop sleep).",
    ),
]


def build_parser() -> argparse.ArgumentParser:
    """The ``litstarter serve`` argument parser."""
    d = ServeOptions()
    parser = ArgumentParser(
        prog="litstarter serve",
        description="Serve a checkpoint or an exported model over HTTP: POST /predict, GET /health, /info, /stats, "
        "/metrics, and the Open Inference Protocol (KServe v2) under /v2.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--model", required=True, help="A .ckpt, weights.pt, model.ts, model.pt2 or .onnx file.")
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on; 0.0.0.0 for every interface.")
    parser.add_argument("--port", type=int, default=8000, help="Port to listen on; 0 picks a free one.")
    parser.add_argument(
        "--model_name",
        default=None,
        help="The model's name in the protocol routes (/v2/models/NAME); default: the model file's name without "
        "its suffix (model.onnx: model).",
    )
    for flag, kind, text in TUNING:
        parser.add_argument(flag, type=kind, default=getattr(d, flag[2:], None), help=text)
    parser.add_argument(
        "--trust_model",
        action="store_true",
        help="Also load formats that can run code: TorchScript (.ts), and a .pt2 holding anything beyond plain "
        "tensors and aten calls. Only for files you made yourself.",
    )
    parser.add_argument("--access_log", action="store_true", help="Log one line per request.")
    return parser


def options_from(args: argparse.Namespace) -> ServeOptions:
    """Check the numbers and bundle them.

    Raises:
        UsageError: Naming the option and the value expected.
    """
    at_least_one = ("max_batch_size", "workers", "topk", "max_pixels", "max_bytes", "max_connections")
    for name in at_least_one:
        if getattr(args, name) < 1:
            raise UsageError(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.num_threads is not None and args.num_threads < 1:
        raise UsageError(f"--num_threads must be >= 1, got {args.num_threads}")
    if args.drain_seconds < 0:
        raise UsageError(f"--drain_seconds must be >= 0, got {args.drain_seconds}")
    if args.model_name is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", args.model_name):
        raise UsageError(
            f"--model_name must be letters, digits, '_', '.' or '-' (a URL path part), got {args.model_name!r}"
        )
    for name in ("request_timeout", "idle_timeout", "header_timeout"):
        if not getattr(args, name) > 0:
            raise UsageError(f"--{name} must be > 0 seconds, got {getattr(args, name)}")
    if not 0 <= args.batch_timeout < args.request_timeout:
        raise UsageError(
            f"--batch_timeout must be >= 0 and below --request_timeout ({args.request_timeout:g} s), "
            f"got {args.batch_timeout}"
        )
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    return ServeOptions(**{name: getattr(args, name) for name in ServeOptions.__dataclass_fields__})


def load_backends(path: str, workers: int, num_threads: int | None, trust_model: bool = False) -> list[Backend]:
    """The model, once per worker, each with ``num_threads`` intra-op threads.

    ``trust_model`` is ``litstarter infer``'s: it lets formats that can run code load (see
    :mod:`litstarter.extras.deploy.artifact_safety`).

    Raises:
        UsageError: If the file does not exist or its suffix is unknown.
        BadInputError: If it cannot be loaded.
    """
    threads = num_threads or max(1, available_cores() // workers)
    try:
        return [open_model(path, num_threads=threads, trust_model=trust_model, spin=False) for _ in range(workers)]
    except FileNotFoundError as err:
        raise UsageError(f"--model: {err}") from None
    except BadInputError:
        raise
    except ValueError as err:  # an unknown suffix
        raise UsageError(f"--model: {err}") from None
    except Exception as err:
        # The runtime refused the file: torch raises OSError / RuntimeError, ONNX Runtime its own Exception kinds
        # (InvalidProtobuf, Fail, ...). Anything else is a bug and keeps its traceback.
        if not isinstance(err, (OSError, RuntimeError)) and not type(err).__module__.startswith("onnxruntime"):
            raise
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise BadInputError(f"cannot load --model {path}: {reason}") from None


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (bound here, so a busy port is one clear line).

    Raises:
        UsageError: If the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as err:
        raise UsageError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None


def ensure_descriptors(max_connections: int) -> None:
    """Raise the soft limit on open files (``ulimit -n``) to what ``max_connections`` needs, if it is lower.

    Each connection holds a descriptor; the model, the threads and the listener need about
    :data:`DESCRIPTOR_RESERVE` more. Without them, accepting fails before the cap is reached.

    Raises:
        UsageError: If the hard limit is lower than that.
    """
    try:
        import resource
    except ImportError:  # Windows: no such limit
        return
    need = max_connections + DESCRIPTOR_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    except (ValueError, OSError):
        raise UsageError(
            f"--max_connections {max_connections} needs {need} open files, and this process may open at most "
            f"{hard} (ulimit -Hn): lower --max_connections or raise the limit"
        ) from None


def require_serve_extra() -> None:
    """Raise :class:`UsageError` naming the install command if the ``serve`` extra is missing."""
    missing = [name for name in SERVE_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(f"serving needs {' and '.join(missing)}: pip install 'litstarter[serve]'")


def serve(
    load: Callable[[], Sequence[Backend]],
    options: ServeOptions,
    sock: socket.socket,
    model_name: str,
    access_log: bool = False,
) -> None:
    """Run the server on ``sock`` until SIGTERM or SIGINT, then drain: every accepted request is answered.

    The server answers at once (liveness 200, readiness 503) and runs ``load`` in the background.

    Raises:
        UsageError, BadInputError: What ``load`` raised (the server stops first).
    """
    import uvicorn

    from litstarter.extras.serve.app import create_app
    from litstarter.extras.serve.connections import MAX_HEADER_BYTES, Limits, guarded_protocol
    from litstarter.extras.serve.shutdown import draining_server, print_summary

    host, port = sock.getsockname()[:2]
    host = f"[{host}]" if ":" in host else host  # an IPv6 address in a URL
    failure: list[BaseException] = []

    def on_ready() -> None:
        backend = app.state.service.backend
        c = backend.contract
        print(
            f"litstarter serve: {backend.path.name} ({backend.runtime}; {c.num_classes} classes, "
            f"{c.channels}x{c.image_size[0]}x{c.image_size[1]} input) on http://{host}:{port} "
            f"[max_batch_size {options.max_batch_size}, batch_timeout {options.batch_timeout:g} s, "
            f"{options.workers} worker(s)]: POST /predict, GET /health /info /stats /metrics, "
            f"/v2/models/{model_name}",
            flush=True,
        )

    def on_failure(err: BaseException) -> None:
        failure.append(err)
        server.should_exit = True

    app = create_app(load, options, model_name, on_ready, on_failure)
    limits = Limits(options.idle_timeout, options.header_timeout, options.max_connections)
    config = uvicorn.Config(
        app,
        http=guarded_protocol(limits),
        ws="none",  # no WebSocket routes; an upgraded connection would leave the guard's count
        timeout_keep_alive=options.idle_timeout,  # uvicorn's own, armed after each answer
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,  # h11's own header limit (400), if h11 is the parser
        log_level="warning",
        access_log=access_log,
        timeout_graceful_shutdown=options.request_timeout + DRAIN_MARGIN,
        lifespan="on",
    )
    service = app.state.service
    server = draining_server()(config, service.state, options.drain_seconds)
    print(f"litstarter serve: loading the model; probes answer at http://{host}:{port}/v2/health/ready", flush=True)
    # uvicorn restores the handlers it found and re-raises the signal that stopped it; with these in place that
    # re-raise is a no-op, so a drained shutdown exits 0 instead of dying by the signal.
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if failure:
        raise failure[0]
    print_summary(service.state.summary(service.batch_sizes()), server)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``litstarter serve``; returns 0 after a drained shutdown."""
    args = build_parser().parse_args(argv)
    options = options_from(args)
    require_serve_extra()
    if Path(args.model).is_dir():
        raise UsageError(
            f"--model {args.model} is a folder; give the model file in it, e.g. {Path(args.model) / 'model.onnx'}"
        )
    if not Path(args.model).is_file():
        raise UsageError(f"--model not found: {args.model}")
    ensure_descriptors(options.max_connections)
    sock = bind(args.host, args.port)  # before loading: a busy port fails at once, not after a slow load
    name = args.model_name or Path(args.model).name.rsplit(".", 1)[0]
    try:
        load = functools.partial(load_backends, args.model, options.workers, args.num_threads, args.trust_model)
        serve(load, options, sock, name, args.access_log)
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
