"""One user-error class for every subcommand: a sentence for the user and the exit code that goes with it.

A user's mistake (a bad option, a missing folder, a corrupt image or model file) raises :class:`UserError`;
``litstarter`` prints ``litstarter <subcommand>: error: <message>`` and exits with its code, without a
traceback. Anything else is a bug and keeps its traceback. ``LITSTARTER_TRACEBACK=1`` shows the traceback
for user errors too. No torch, no Lightning: the light subcommands import this.

| code | meaning | examples |
| --- | --- | --- |
| 2 (:data:`USAGE`) | the command line or config is wrong | unknown option, bad config value, missing path |
| 1 (:data:`BAD_INPUT`) | the inputs exist but can't be used | unreadable images, a corrupt checkpoint or model file |
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

USAGE = 2
BAD_INPUT = 1
TRACEBACK_ENV = "LITSTARTER_TRACEBACK"


class UserError(Exception):
    """A mistake in what the user gave us, as one sentence naming the file, key or value.

    Args:
        message: The sentence shown to the user; it should name the file, key or value and what was expected.
        exit_code: :data:`USAGE` (2) for options, config values and missing paths; :data:`BAD_INPUT` (1) for
            unusable data or model files.
    """

    exit_code: int = USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(UserError):
    """A bad option, config value or path (exit 2)."""

    exit_code = USAGE


class BadInputError(UserError):
    """Data or a model file that exists but cannot be used (exit 1)."""

    exit_code = BAD_INPUT


def want_traceback() -> bool:
    """Whether ``LITSTARTER_TRACEBACK`` asks for full tracebacks on user errors."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() not in ("", "0", "false", "no")


def report(subcommand: str, err: UserError) -> int:
    """Print ``litstarter <subcommand>: error: <message>`` (and the traceback if asked for); return the exit code."""
    if want_traceback():
        traceback.print_exception(type(err), err, err.__traceback__)
    message = str(err).strip() or type(err).__name__
    print(f"litstarter {subcommand}: error: {message}", file=sys.stderr)
    return err.exit_code


def run_reporting(subcommand: str, func: Callable[[], int | None]) -> int:
    """Call ``func``; a :class:`UserError` anywhere inside becomes one line on stderr and its exit code."""
    try:
        return int(func() or 0)
    except UserError as err:
        return report(subcommand, err)
