"""The extras' command-line parser: argparse's, but a mistake is one line (no usage block) with the nearest option,
and an option is never taken from a prefix of it (``--mod`` is a typo, not ``--model``), as in ``fit``."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from litstarter.errors import UsageError

from .errors import did_you_mean


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` without abbreviations, whose errors raise :class:`UsageError` (exit 2)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        """argparse's, remembering the command line: a missing required option is often a mistyped one."""
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        """Raise the refusal as one sentence; an unknown option (named before a missing one, which is often the
        same option mistyped) with the nearest known one."""
        # tests/test_compat.py: "argparse ArgumentParser._actions"
        known = [o for action in self._actions for o in action.option_strings if o.startswith("--")]
        given = [a.split("=", 1)[0] for a in getattr(self, "_given", []) if a.startswith("--")]
        unknown = next((a for a in given if a not in known), None)
        if unknown and ("unrecognized arguments" in message or "are required" in message):
            hint = did_you_mean(unknown, known, cutoff=0.6) or f" ({self.prog} --help lists them)"
            raise UsageError(f"{unknown}: no such option{hint}")
        raise UsageError(message)
