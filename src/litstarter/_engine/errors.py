"""How a user's mistake reaches the terminal: one line ``litstarter <subcommand>: error: <message>`` and its exit code.

The error classes themselves are public, in :mod:`litstarter.errors`; this module finds one behind whatever a
subcommand raised (:func:`user_error_in`) and reports it (:func:`run_reporting`). ``LITSTARTER_TRACEBACK=1`` shows
the traceback for user errors too. No torch, no Lightning: the light subcommands import this.
"""

from __future__ import annotations

import difflib
import os
import sys
import traceback
from collections.abc import Callable, Iterable

from litstarter.errors import UsageError, UserError

TRACEBACK_ENV = "LITSTARTER_TRACEBACK"


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
