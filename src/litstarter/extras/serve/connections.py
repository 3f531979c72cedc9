"""How long ``litstarter serve`` keeps a connection, and how many: the timeouts and the cap uvicorn lacks.

uvicorn 0.54 arms its keep-alive timeout only after a response, has no header timeout, and its
``limit_concurrency`` counts idle connections. So every connection gets a :class:`ConnectionGuard`:

| the connection | what happens |
| --- | --- |
| sends nothing for ``--idle_timeout`` s (new, or after an answer) | closed |
| has not finished its request headers ``--header_timeout`` s after their first byte | 408, closed |
| sends over :data:`MAX_HEADER_BYTES` of headers | 431, closed |
| arrives while ``--max_connections`` are open | 503 at once, then closed within :data:`REFUSE_LINGER` s |
| sends body bytes after its request was answered (a route that reads none) | closed ``--header_timeout`` s later |
| is open without a request being answered at SIGTERM | :data:`DRAIN_GRACE` s for a request to arrive, then closed |

A request whose headers arrived is the app's (its ``--request_timeout`` bounds it). The guard is bound to
uvicorn's protocol in :func:`guarded_protocol`, the one place that touches uvicorn's internals.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass

#: Request headers (request line included) beyond this many bytes are refused with 431.
MAX_HEADER_BYTES = 64 * 1024
#: A connection refused by the cap is closed once the client closes, or after this many seconds.
REFUSE_LINGER = 1.0
#: At SIGTERM, an open connection without a request being answered waits this long for one to arrive.
DRAIN_GRACE = 0.2

REASONS = {408: "Request Timeout", 431: "Request Header Fields Too Large", 503: "Service Unavailable"}


@dataclass(frozen=True)
class Limits:
    """What :class:`ConnectionGuard` enforces (the ``litstarter serve`` options of the same names).

    Args:
        idle_timeout: Seconds a connection may stay open without sending a byte of a request.
        header_timeout: Seconds from a request's first byte to the end of its headers.
        max_connections: Connections open at once; one more is answered 503.
    """

    idle_timeout: float
    header_timeout: float
    max_connections: int


def error_response(status: int, message: str) -> bytes:
    """A complete ``HTTP/1.1`` answer ``{"error": message}`` that closes the connection."""
    body = json.dumps({"error": message}).encode()
    retry = b"retry-after: 1\r\n" if status == 503 else b""
    head = f"HTTP/1.1 {status} {REASONS[status]}\r\ncontent-type: application/json\r\n"
    return head.encode() + retry + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body


class ConnectionGuard:
    """One connection's timer and its place under the cap; the HTTP parsing stays uvicorn's.

    Args:
        limits: The timeouts and the cap.
        admitted: The guards of the connections open under the cap (shared by all connections).
        transport: The connection.
        loop: The event loop the timers run on.
        answering: Whether a request on this connection is being answered now.
    """

    def __init__(
        self,
        limits: Limits,
        admitted: set[ConnectionGuard],
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        answering: Callable[[], bool],
    ) -> None:
        self.limits, self.admitted, self.transport, self.loop = limits, admitted, transport, loop
        self.answering = answering
        self.timer: asyncio.TimerHandle | None = None
        self.header_bytes = 0
        self.header_tail = b""  # the last bytes of headers not yet complete: their end may straddle two reads
        self.draining = False
        self.refused = len(admitted) >= limits.max_connections
        if self.refused:
            message = f"{len(admitted)} connections are open, the most --max_connections allows; retry later"
            self.transport.write(error_response(503, message))
            if self.transport.can_write_eof():
                self.transport.write_eof()  # the client reads the answer, then closes; its request is dropped
            self._arm(REFUSE_LINGER, self.transport.close)
        else:
            admitted.add(self)
            self._arm(limits.idle_timeout, self.transport.close)

    def _arm(self, seconds: float, then: Callable[[], None]) -> None:
        self.cancel()
        self.timer = self.loop.call_later(seconds, then)

    def cancel(self) -> None:
        """Stop the timer (the connection is closed, or a request's headers are complete)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def lost(self) -> None:
        """The connection is closed: free its place under the cap."""
        self.cancel()
        self.admitted.discard(self)

    def headers_fit(self, data: bytes) -> bool:
        """Whether the request headers in ``data`` (a read outside a body) keep within :data:`MAX_HEADER_BYTES`;
        if not, the client is answered 431 before the parser sees them.

        Headers that end within one read reach the parser whole, so they are measured here, up to their blank line
        (the first request's, when a read holds several).
        """
        end = (self.header_tail + data).find(b"\r\n\r\n")
        size = len(data) if end < 0 else end + 4 - len(self.header_tail)
        if self.header_bytes + size <= MAX_HEADER_BYTES:
            return True
        self._cut(431, f"the request headers are over {MAX_HEADER_BYTES} bytes")
        return False

    def header_data(self, data: bytes) -> None:
        """``data``, bytes of a request's headers, arrived, and the headers are not complete yet."""
        if self.header_bytes == 0 and not self.draining:
            self._arm(self.limits.header_timeout, self._headers_late)
        self.header_bytes += len(data)
        self.header_tail = data[-3:]  # headers_fit has checked the size

    def body_after_answer(self) -> None:
        """Body bytes of a request that was answered without reading it: the rest gets ``--header_timeout``."""
        if self.timer is None:
            self._arm(self.limits.header_timeout, self.transport.close)

    def headers_done(self) -> None:
        """A request's headers are complete: from here on the app and its ``--request_timeout`` answer it."""
        self.cancel()
        self.header_bytes = 0
        self.header_tail = b""

    def drain(self) -> None:
        """SIGTERM with no request being answered here: wait :data:`DRAIN_GRACE` s for one to arrive."""
        self.draining = True
        if self.refused:
            self.transport.close()
        else:
            self._arm(DRAIN_GRACE, self._drained)

    def _headers_late(self) -> None:
        if self.answering():  # a pipelined request waits behind the one being answered: give it its time again
            self._arm(self.limits.header_timeout, self._headers_late)
        else:
            late = f"the request headers did not arrive within --header_timeout {self.limits.header_timeout:g} s"
            self._cut(408, late)

    def _drained(self) -> None:
        if self.answering():
            return
        if self.header_bytes:  # a request was arriving: tell it why it is not answered
            self._cut(503, "the server is shutting down")
        else:
            self.transport.close()

    def _cut(self, status: int, message: str) -> None:
        self.cancel()
        if not self.transport.is_closing():
            self.transport.write(error_response(status, message))
            self.transport.close()


def guarded_protocol(limits: Limits, parser: str = "auto") -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol with a :class:`ConnectionGuard` per connection: ``uvicorn.Config(http=...)``.

    Args:
        limits: The timeouts and the cap.
        parser: ``"httptools"``, ``"h11"``, or ``"auto"``: what uvicorn's ``http="auto"`` picks, httptools if it
            is installed (``uvicorn[standard]`` installs it), else h11.

    uvicorn internals used, all here (as of uvicorn 0.54): the protocol classes and their
    ``connection_made`` / ``data_received`` / ``connection_lost`` / ``shutdown``; ``self.loop``; ``self.cycle``,
    the request being answered (a new object once a request's headers are parsed, ``response_complete`` once
    answered); whether the parser is inside a request body (httptools: between ``on_headers_complete`` and
    ``on_message_complete``; h11: ``conn.their_state``). uvicorn's ``shutdown`` closes a connection at once
    unless a request is being answered; the guard gives it :data:`DRAIN_GRACE` first.
    """
    # tests/test_compat.py: "uvicorn HTTP protocols"
    # tests/test_compat.py: "uvicorn RequestResponseCycle.response_complete"
    # tests/test_compat.py: "h11 Connection.their_state"
    if parser == "auto":
        parser = "httptools" if importlib.util.find_spec("httptools") is not None else "h11"
    if parser == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base

        def in_body(protocol) -> bool:
            return protocol.guard_in_body
    else:
        import h11
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base

        def in_body(protocol) -> bool:
            return protocol.conn.their_state is h11.SEND_BODY

    admitted: set[ConnectionGuard] = set()

    class GuardedProtocol(Base):
        guard_in_body = False

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self.guard = ConnectionGuard(limits, admitted, transport, self.loop, self.answering)

        def answering(self) -> bool:
            return self.cycle is not None and not self.cycle.response_complete

        def connection_lost(self, exc) -> None:
            self.guard.lost()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self.guard.refused:
                return  # read and dropped, so that closing does not reset the connection under the 503
            waiting, before = not in_body(self), self.cycle
            if waiting and not self.guard.headers_fit(data):
                return
            super().data_received(data)
            if self.cycle is not before:
                self.guard.headers_done()
                if self.guard.draining:
                    super().shutdown()  # answered, then closed
            elif self.transport.is_closing():
                pass
            elif not in_body(self) and waiting:
                self.guard.header_data(data)
            elif in_body(self) and not self.answering():  # uvicorn's keep-alive timer stops at each byte
                self.guard.body_after_answer()

        def on_headers_complete(self) -> None:  # httptools only
            self.guard_in_body = True
            super().on_headers_complete()

        def on_message_complete(self) -> None:  # httptools only
            self.guard_in_body = False
            super().on_message_complete()

        def shutdown(self) -> None:
            if self.answering() and not self.guard.refused:
                super().shutdown()  # answered, then closed
            else:
                self.guard.drain()

    return GuardedProtocol
