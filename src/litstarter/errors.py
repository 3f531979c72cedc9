"""The errors a user's mistake raises: one sentence for the user, and the exit code that goes with it.

Raise :class:`UsageError` for a bad option, config value or path, and :class:`BadInputError` for data or a model
file that exists but cannot be used. ``litstarter`` catches either at the command line's edge, prints
``litstarter <subcommand>: error: <message>`` and exits with the error's code, without a traceback
(``LITSTARTER_TRACEBACK=1`` shows it). Anything else is a bug and keeps its traceback. No torch, no Lightning: the
light subcommands import this.

| code | meaning | examples |
| --- | --- | --- |
| 2 (:data:`USAGE`) | the command line or config is wrong | unknown option, bad config value, missing path |
| 1 (:data:`BAD_INPUT`) | the inputs exist but can't be used | unreadable images, a corrupt checkpoint or model file |
"""

from __future__ import annotations

__all__ = ["BAD_INPUT", "USAGE", "BadInputError", "UsageError", "UserError"]

#: The exit code of a wrong command line or config.
USAGE = 2
#: The exit code of inputs that exist but cannot be used.
BAD_INPUT = 1


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


class UsageError(UserError, ValueError):
    """A bad option, config value or path (exit 2); a ``ValueError`` too, for code that checks values."""

    exit_code = USAGE


class BadInputError(UserError, ValueError):
    """Data or a model file that exists but cannot be used (exit 1); a ``ValueError`` too."""

    exit_code = BAD_INPUT
