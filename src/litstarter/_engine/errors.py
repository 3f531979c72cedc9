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

import difflib
import os
import sys
import traceback
from collections.abc import Callable, Iterable

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


class UsageError(UserError, ValueError):
    """A bad option, config value or path (exit 2); a ``ValueError`` too, for code that checks values."""

    exit_code = USAGE


class BadInputError(UserError, ValueError):
    """Data or a model file that exists but cannot be used (exit 1); a ``ValueError`` too."""

    exit_code = BAD_INPUT


def want_traceback() -> bool:
    """Whether ``LITSTARTER_TRACEBACK`` asks for full tracebacks on user errors."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() not in ("", "0", "false", "no")


def report(subcommand: str, err: UserError, show_traceback: bool = True) -> int:
    """Print ``litstarter <subcommand>: error: <message>`` (and the traceback if asked for); return the exit code."""
    if show_traceback and want_traceback():
        traceback.print_exception(type(err), err, err.__traceback__)
    message = str(err).strip() or type(err).__name__
    print(f"litstarter {subcommand}: error: {message}", file=sys.stderr)
    return err.exit_code


def _chain(err: BaseException) -> list[BaseException]:
    """``err`` and the exceptions it was raised from (``__cause__``, else ``__context__``), outermost first."""
    chain: list[BaseException] = []
    while err is not None and all(err is not seen for seen in chain):
        chain.append(err)
        err = err.__cause__ or err.__context__
    return chain


def user_error_in(err: BaseException) -> UserError | None:
    """The user's mistake behind ``err``, or ``None`` for a bug.

    LightningCLI and jsonargparse wrap what a class raises while it is built from the config (jsonargparse's
    "Does not validate against any of the Union subtypes" ``ValueError`` has the real error as its cause), so
    the whole chain is searched, innermost first: a :class:`UserError` (our own checks raise one explicitly),
    Lightning's ``MisconfigurationException`` (a Trainer configuration that cannot work), or a ``PermissionError``
    on a named file (anywhere: Lightning removing an old checkpoint from a read-only folder). A ``ValueError``
    from anywhere else, your own modules included, is a bug and keeps its traceback.
    """
    chain = _chain(err)
    for inner in reversed(chain):
        if isinstance(inner, UserError):
            return inner
    for inner in reversed(chain):
        # Lightning's word for a Trainer configuration that cannot work (checked by name: no Lightning import here).
        if any(cls.__name__ == "MisconfigurationException" for cls in type(inner).__mro__):
            return UsageError(str(inner).strip())
    for inner in reversed(chain):
        if isinstance(inner, PermissionError) and inner.filename:  # a folder the user may not write, never a bug
            return UsageError(f"permission denied: '{inner.filename}' ({inner.strerror}); fix its permissions")
    return None


def run_reporting(subcommand: str, func: Callable[[], int | None]) -> int:
    """Call ``func``; a user's mistake anywhere inside (see :func:`user_error_in`) becomes one line on stderr
    and its exit code. Anything else propagates with its traceback."""
    try:
        return int(func() or 0)
    except Exception as err:
        user_error = user_error_in(err)
        if user_error is None:
            raise
        if want_traceback():
            traceback.print_exception(type(err), err, err.__traceback__)
        return report(subcommand, user_error, show_traceback=False)


def did_you_mean(word: str, known: Iterable[str], cutoff: float = 0.75) -> str:
    """`` (did you mean X?)`` for the closest of ``known`` to a mistyped ``word``, or ``""``."""
    match = difflib.get_close_matches(word, list(known), n=1, cutoff=cutoff)
    return f" (did you mean {match[0]}?)" if match else ""
