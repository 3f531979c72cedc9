"""litstarter's own log lines (a stem adapted to the channels, the batch plan, a fallback) on stderr, as
Lightning's are shown: rank 0 only."""

from __future__ import annotations

import logging
import sys

from lightning.fabric.utilities.rank_zero import rank_zero_only


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is now, not the stream it was made with: a later in-process run (a tune
    trial, a notebook cell, a test) may have replaced stderr, and the first one may be closed by then."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def show_litstarter_logs(level: int = logging.INFO) -> None:
    """Print the ``litstarter`` loggers' records at ``level`` and above to stderr, from rank 0 only (once)."""
    logger = logging.getLogger("litstarter")
    if logger.handlers:
        return
    handler = _StderrHandler()
    handler.addFilter(lambda record: getattr(rank_zero_only, "rank", 0) == 0)
    logger.addHandler(handler)
    logger.setLevel(level)
