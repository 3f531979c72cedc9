"""litstarter serve under hostile connections and bodies: one real server process, raw loopback sockets.

One server with short timeouts (``--idle_timeout 2 --header_timeout 3 --max_connections 310``) takes the checks
in any order: idle connections and the cap, slow headers, hostile JSON; SIGTERM stops a server of its own. Each
attack runs beside a good request on a fresh connection.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import select
import selectors
import signal
import socket
import time

import numpy as np
import pytest

from tests.extras.serve.test_serve import png, start_server
from tests.extras.serve.waiting import wait_until

pytestmark = pytest.mark.slow

IDLE, HEADER, CAP = 2.0, 3.0, 310
GOOD = png(np.zeros((8, 8), np.uint8))


def guarded_server(digits_export):
    """The server with short connection limits (its other limits are the defaults)."""
    args = ["--idle_timeout", str(IDLE), "--header_timeout", str(HEADER), "--max_connections", str(CAP)]
    server = start_server(digits_export.out / "model.onnx", *args)
    yield server
    if server.proc.poll() is None:
        server.proc.kill()


#: Shared by the checks that leave it serving; the SIGTERM check stops one of its own.
guarded = pytest.fixture(guarded_server, scope="module", name="guarded")
stopped_guarded = pytest.fixture(guarded_server, name="stopped_guarded")


def address(server) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def request(method: str, path: str, body: bytes = b"", kind: str = "image/png") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: test\r\n"
    if body:
        head += f"Content-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def answer(sock: socket.socket, timeout: float = 30) -> tuple[int, dict]:
    """Read one HTTP response from ``sock``: its status and JSON body."""
    sock.settimeout(timeout)
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response.status, json.loads(response.read() or b"null")


def fresh_request(server, data: bytes) -> tuple[int, dict]:
    """``data`` sent on a new connection; the answer."""
    with socket.create_connection(address(server), timeout=30) as sock:
        sock.sendall(data)
        return answer(sock)


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def closed_after(socks: dict[socket.socket, float], timeout: float) -> list[float]:
    """Wait (at most ``timeout`` s) for the server to close each socket; seconds from its start to its close."""
    selector = selectors.DefaultSelector()
    for sock in socks:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    seconds, deadline = [], time.monotonic() + timeout
    while len(seconds) < len(socks) and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.1):
            try:
                data = key.fileobj.recv(4096)
            except ConnectionResetError:
                data = b""
            assert data == b"", f"an idle connection was sent {data[:80]!r}"
            seconds.append(time.monotonic() - socks[key.fileobj])
            selector.unregister(key.fileobj)
    selector.close()
    return seconds


def test_idle_connections_are_closed_and_the_cap_answers_503(guarded):
    fds_before = open_fds(guarded.proc.pid)
    idle = {}
    for _ in range(300):
        sock = socket.create_connection(address(guarded))
        idle[sock] = time.monotonic()
    status, body = fresh_request(guarded, request("POST", "/predict", GOOD))
    assert status == 200 and body["predictions"], body  # served beside 300 idle connections
    pid = guarded.proc.pid  # the server has closed that one too:
    wait_until(lambda: open_fds(pid) <= fds_before + 300 + 5, 10, "the server closing a finished connection")
    for _ in range(CAP - 300):  # the cap is full: a new client gets 503 at once, and its request is dropped
        sock = socket.create_connection(address(guarded))
        idle[sock] = time.monotonic()
    # the server accepts them all before the next one
    wait_until(lambda: open_fds(pid) >= fds_before + CAP - 10, 10, "the server accepting the connections up to the cap")
    fds_full = open_fds(guarded.proc.pid)
    refused_at = time.monotonic()
    status, body = fresh_request(guarded, request("POST", "/predict", GOOD))
    assert status == 503 and "--max_connections" in body["error"], body
    assert time.monotonic() - refused_at < 1
    try:
        seconds = closed_after(idle, timeout=IDLE + 5)
    finally:
        for sock in idle:
            sock.close()
    assert len(seconds) == len(idle), f"{len(idle) - len(seconds)} of {len(idle)} idle connections are still open"
    print(
        f"{len(idle)} idle connections: server descriptors {fds_before} -> {fds_full}; closed by the server "
        f"{min(seconds):.2f}..{max(seconds):.2f} s after they opened (--idle_timeout {IDLE:g})"
    )
    assert IDLE - 0.1 < min(seconds) and max(seconds) < IDLE + 2
    assert fds_full - fds_before >= CAP - 10
    status, body = fresh_request(guarded, request("POST", "/predict", GOOD))
    assert status == 200 and body["predictions"], body  # the idle ones are gone: served again
    deadline = time.monotonic() + 5
    while open_fds(guarded.proc.pid) > fds_before + 5:
        assert time.monotonic() < deadline, "the server still holds the idle connections' descriptors"
        time.sleep(0.1)


def test_slow_headers_are_cut_off_at_the_header_timeout(guarded):
    with socket.create_connection(address(guarded)) as slow:
        started = time.monotonic()
        slow.sendall(b"POST /predict HTTP/1.1\r\n")
        received = b""
        for i in range(int(HEADER) + 4):  # one header line a second, until the server answers
            readable, _, _ = select.select([slow], [], [], 1.0)
            if readable:
                received = slow.recv(4096)
                break
            if i == 0:  # during the attack, a good request on a fresh connection
                status, body = fresh_request(guarded, request("POST", "/predict", GOOD))
                assert status == 200 and body["predictions"], body
            slow.sendall(f"X-Line-{i}: slow\r\n".encode())
        cut = time.monotonic() - started
    status_line = received.split(b"\r\n", 1)[0].decode()
    print(f"headers sent one line a second: answered {status_line!r} after {cut:.2f} s")
    assert received.startswith(b"HTTP/1.1 408 ") and b"--header_timeout 3 s" in received, received
    assert HEADER - 0.1 < cut < HEADER + 1.5
    with socket.create_connection(address(guarded)) as big:  # headers without end, sent fast: 431 at once
        big.sendall(b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 70_000)
        status, body = answer(big, timeout=5)
    assert status == 431 and "\n" not in body["error"], body


def test_hostile_json_is_400_and_mime_base64_is_served(guarded):
    cases = {
        "150,000 nested [": (b"[" * 150_000, "nested too deeply"),
        "a 5,001-digit number": (b'{"image": ' + b"7" * 5001 + b"}", "digits"),
        "not base64": (json.dumps({"image": "not * base64"}).encode(), "not valid base64"),
    }
    for name, (body, words) in cases.items():
        status, answer_ = fresh_request(guarded, request("POST", "/predict", body, kind="application/json"))
        assert status == 400 and words in answer_["error"] and "\n" not in answer_["error"], (name, answer_)
    mime = base64.encodebytes(png(np.random.default_rng(0).integers(0, 255, (40, 40), np.uint8))).decode()
    assert mime.count("\n") > 1  # what the base64 command writes: lines of 76 characters
    escaped, raw = (
        json.dumps({"image": mime}).encode(),
        b'{"image": "' + mime.encode() + b'"}',
    )  # curl -d "$(base64 ...)"
    for body in (escaped, raw):
        status, answer_ = fresh_request(guarded, request("POST", "/predict", body, kind="application/json"))
        assert status == 200 and answer_["predictions"], answer_


def test_sigterm_answers_requests_on_open_connections(stopped_guarded):
    guarded = stopped_guarded
    """Requests that reach already-open connections after the listener closed are answered, not reset."""
    conns = []
    for _ in range(8):  # open and used once: accepted, idle between requests
        sock = socket.create_connection(address(guarded))
        sock.sendall(request("GET", "/health"))
        assert answer(sock)[0] == 200
        conns.append(sock)
    guarded.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 5
    while True:  # the listener closes when the drain begins
        try:
            socket.create_connection(address(guarded), timeout=1).close()
        except ConnectionRefusedError:
            break
        assert time.monotonic() < deadline, "the server kept accepting connections after SIGTERM"
        time.sleep(0.002)
    drain_began = time.monotonic()
    for sock in conns:
        sock.sendall(request("POST", "/predict", GOOD))
    sent = time.monotonic() - drain_began
    statuses = []
    for sock in conns:
        try:
            statuses.append(answer(sock)[0])
        except (ConnectionError, http.client.HTTPException) as err:
            statuses.append(type(err).__name__)
        finally:
            sock.close()
    print(f"SIGTERM: 8 requests sent {1000 * sent:.1f} ms after the listener closed were answered {statuses}")
    assert all(s in (200, 503) for s in statuses), statuses
    assert guarded.proc.wait(30) == 0, guarded.output()
    output = guarded.output()
    assert "Traceback" not in output and "heavy modules imported: []" in output, output
