"""Waiting on what a server shows (a probe's status, a refused connection) with a deadline, never on a sleep."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

POLL = 0.02  # seconds between looks: short, so that a check sees a state that lasts a fraction of a second


def wait_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Return once ``condition()`` is true; fail naming ``what`` if it is not within ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {seconds} s"
        time.sleep(POLL)


def refuses_connections(url: str) -> bool:
    """Whether nothing listens at ``url`` any more (the connection is refused)."""
    try:
        httpx.get(f"{url}/health", timeout=5)
    except httpx.ConnectError:
        return True
    return False


def status_of(url: str) -> int | None:
    """The status ``GET url`` answers, or None if the connection failed."""
    try:
        return httpx.get(url, timeout=5).status_code
    except httpx.TransportError:
        return None
