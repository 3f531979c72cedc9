"""A parser's arguments as jsonargparse reads them: each key, the type it checks and the doc ``--help`` shows."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from jsonargparse import SUPPRESS, ActionConfigFile, ArgumentParser


@dataclass(frozen=True)
class Argument:
    """One key a config may set."""

    key: str  #: dotted, from the parser's root: ``trainer.max_epochs``, ``lr``
    hint: Any  #: the type jsonargparse checks the value against
    doc: str  #: what ``--help`` shows for it (from the class's ``Args:`` docstring)
    default: Any = inspect.Parameter.empty  #: its default, as the parser has it (``empty``: none)
    required: bool = False  #: whether a run needs it (a config file may still leave it to another)


def parser_arguments(parser: ArgumentParser) -> list[Argument]:
    """Every key a config file of ``parser`` may set, in the parser's order (``--help``, ``--print_config`` and the
    ``--<key>.help`` of a class-typed key are no keys).

    jsonargparse keeps each argument's type in the private ``ActionTypeHint._typehint``, and argparse its arguments in
    the private ``_actions``; there is no public list of a parser's typed arguments. A release that renames either
    fails tests/test_compat.py.
    """
    # tests/test_compat.py: "argparse ArgumentParser._actions"
    # tests/test_compat.py: "jsonargparse ActionTypeHint._typehint"
    found = []
    for action in parser._actions:
        if isinstance(action, ActionConfigFile):  # `config: <file>` in a config loads that file there
            found.append(Argument(action.dest, str, action.help or ""))
        elif hasattr(action, "_typehint") and action.default != SUPPRESS:
            found.append(Argument(action.dest, action._typehint, action.help or "", action.default, action.required))
    return found


def class_arguments(cls: type, skip: int = 0) -> list[Argument]:
    """The arguments of ``cls`` a config gives in ``init_args``, read by jsonargparse as LightningCLI reads them
    (``**kwargs`` passed on to a base class are that class's arguments).

    Args:
        cls: The class.
        skip: How many leading arguments the caller supplies (a ``Callable[[params], Optimizer]`` supplies one).

    Raises:
        ValueError: jsonargparse cannot read the signature of ``cls``.
    """
    parameters = list(inspect.signature(cls).parameters)
    parser = ArgumentParser(exit_on_error=False)
    parser.add_class_arguments(cls, skip=set(parameters[:skip]), fail_untyped=False)
    return parser_arguments(parser)
