"""How ``litstarter serve`` stops: SIGTERM marks it draining, an optional wait keeps it serving, uvicorn drains.

On the first SIGTERM (or Ctrl+C) the readiness probes turn 503. With ``--drain_seconds S`` the server goes on
accepting and answering for ``S`` seconds (liveness 200, readiness 503: the load balancers take it out meanwhile);
then, or at a second signal, uvicorn's shutdown closes the listener and answers every request already accepted.
"""

from __future__ import annotations

import signal
import time


def draining_server() -> type:
    """uvicorn's ``Server`` class with the drain of ``litstarter serve`` (uvicorn is imported here, when serving)."""
    import uvicorn

    # tests/test_compat.py: "uvicorn Server.handle_exit and on_tick"
    class DrainingServer(uvicorn.Server):
        """uvicorn's server, marking the app as draining when a signal asks it to stop.

        With ``drain_seconds`` the stop waits that long: the listener stays open, the readiness probes answer
        503 and every route still serves; then (or at a second signal) uvicorn's own shutdown runs.
        """

        def __init__(self, config: uvicorn.Config, state, drain_seconds: float = 0.0) -> None:
            super().__init__(config)
            self.state = state
            self.drain_seconds = drain_seconds
            self.signal_name = ""
            self.in_flight_at_signal = 0
            self.stop_at: float | None = None
            self.pending: tuple[int, object] | None = None

        def handle_exit(self, sig: int, frame) -> None:
            first = not self.signal_name
            if first:  # no I/O here: this runs inside a signal handler
                self.signal_name = signal.Signals(sig).name
                self.in_flight_at_signal = self.state.in_flight
                self.state.draining = True
            if first and self.drain_seconds > 0:
                self.stop_at, self.pending = time.monotonic() + self.drain_seconds, (sig, frame)
                return
            self.stop_at = None
            super().handle_exit(sig, frame)

        async def on_tick(self, counter: int) -> bool:
            if self.stop_at is not None and time.monotonic() >= self.stop_at:
                self.stop_at = None
                self.in_flight_at_signal = self.state.in_flight
                super().handle_exit(*self.pending)
            return await super().on_tick(counter)

    return DrainingServer


def print_summary(stats: dict, server) -> None:
    """The last line: what was drained, the requests by status and the batches by size."""
    by_status = ", ".join(f"{k}: {v}" for k, v in stats["requests"]["by_status"].items())
    sizes = ", ".join(f"{k}: {v}" for k, v in stats["batches"]["sizes"].items())
    drained = (
        f"{server.signal_name}: drained {server.in_flight_at_signal} request(s) in flight; "
        if server.signal_name
        else ""
    )
    print(
        f"litstarter serve: stopped. {drained}{stats['requests']['received']} request(s) received, "
        f"answered by status {{{by_status}}}; batches by size {{{sizes}}}",
        flush=True,
    )
