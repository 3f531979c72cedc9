"""The connection guard on each HTTP parser uvicorn may run (httptools, h11), in-process with a trivial app.

``litstarter serve`` runs whichever parser is installed (httptools with ``uvicorn[standard]``); the end-to-end
checks in test_serve_connections.py cover that one, these cover both, with timeouts of a fraction of a second.
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
import time

import pytest

from litstarter.extras.serve.connections import DRAIN_GRACE, Limits, guarded_protocol

pytestmark = pytest.mark.slow

IDLE, HEADER = 0.4, 0.6


async def ok(scope, receive, send) -> None:
    """Reads the body (not on ``/unread``), answers 200 ``{}``."""
    while scope["path"] != "/unread" and (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"{}"})


def status_of(sock: socket.socket) -> int:
    sock.settimeout(5)
    response = http.client.HTTPResponse(sock)
    response.begin()
    response.read()
    return response.status


#: How late a loaded machine may see a timeout fire: the windows below are this wide above each limit.
LATE = 2.0


def closed_within(sock: socket.socket, seconds: float, since: float | None = None) -> float:
    """Seconds from ``since`` (default: now) until the server closes ``sock`` (reading nothing but the end); it
    waits at most ``seconds``."""
    started = time.monotonic() if since is None else since
    sock.settimeout(seconds)
    data = sock.recv(100)
    assert data == b"", data
    return time.monotonic() - started


def trickle_until_closed(sock: socket.socket, seconds: float, since: float) -> float:
    """Send a byte every 0.05 s until the server closes ``sock`` (at most ``seconds``); how long from ``since``."""
    started = since
    sock.setblocking(False)
    while time.monotonic() - started < seconds:
        try:
            sock.sendall(b"x")
            if select.select([sock], [], [], 0.05)[0] and sock.recv(100) == b"":
                break
        except OSError:  # EPIPE, or a reset
            break
    return time.monotonic() - started


@pytest.mark.parametrize("parser", ["httptools", "h11"])
def test_timeouts_cap_and_drain_grace(parser):
    uvicorn = pytest.importorskip("uvicorn")
    pytest.importorskip(parser)
    limits = Limits(idle_timeout=IDLE, header_timeout=HEADER, max_connections=3)
    config = uvicorn.Config(ok, http=guarded_protocol(limits, parser), timeout_keep_alive=IDLE, lifespan="off")
    listener = socket.create_server(("127.0.0.1", 0))
    addr = listener.getsockname()
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    try:
        used, idle, slow = (socket.create_connection(addr) for _ in range(3))
        used.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
        assert status_of(used) == 200
        answered = time.monotonic()  # the idle timer started before this: a close is no later than IDLE from here
        slow.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n")
        with socket.create_connection(addr) as over:  # the cap of 3 is full
            over.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            assert status_of(over) == 503
        assert IDLE - 0.1 < closed_within(used, IDLE + LATE + 1, answered) < IDLE + LATE  # idle after its answer
        assert closed_within(idle, LATE + 1) < LATE  # a new connection that never sent a byte, opened with `used`
        slow.settimeout(3)
        assert slow.recv(100).startswith(b"HTTP/1.1 408 ")
        for line, status in [(70_000, 431), (66_000, 431), (60_000, 200)]:  # without an end; ending in one read
            with socket.create_connection(addr) as big:
                end = b"" if line == 70_000 else b"\r\n\r\n"
                big.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nX: " + b"a" * line + end)
                assert status_of(big) == status, line
        with socket.create_connection(addr) as unread:  # answered unread; the rest of the body trickles in
            unread.sendall(b"POST /unread HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
            assert status_of(unread) == 200
            answered = time.monotonic()
            assert HEADER - 0.1 < trickle_until_closed(unread, HEADER + LATE + 1, answered) < HEADER + LATE
        waiting = socket.create_connection(addr)
        waiting.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        assert status_of(waiting) == 200
        server.should_exit = True
        deadline = time.monotonic() + 5
        while True:
            try:
                socket.create_connection(addr, timeout=1).close()
            except ConnectionRefusedError:
                break
            assert time.monotonic() < deadline
            time.sleep(0.002)
        waiting.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")  # within the grace: answered, then closed
        assert status_of(waiting) == 200
        assert closed_within(waiting, DRAIN_GRACE + LATE + 1) < DRAIN_GRACE + LATE
    finally:
        server.should_exit = True
        thread.join(10)
        for sock in (used, idle, slow):
            sock.close()
