"""Every run's ``config.yaml`` runs again: the values jsonargparse cannot write by itself, and the check for any other.

* ``numbers.Number`` (torchvision's ``RandomRotation(degrees=10)``, ``RandomAffine``, ...) is no type jsonargparse
  knows: it neither parses ``degrees: 10`` from the command line nor writes it back (``config.yaml`` would say
  ``degrees: Unable to serialize instance 10``). Registered here as what it is: a plain int or float.
* ``--trainer.limit_train_batches=1`` is one batch, never 100%: Lightning declares its counts-or-fractions as
  ``Union[int, float]``, but Python caches unions regardless of order, so a package imported before Lightning that
  wrote ``Union[float, int]`` (Lightning's own ``fabric.py`` does; httpx imported first is enough for it to stick)
  makes the Trainer's annotation float-first, and so can jsonargparse's own ``Optional[...]`` of an argument whose
  default is None, when the parser is built. jsonargparse then reads ``1`` as ``1.0``. After the parser is built,
  the Trainer's arguments are put back int-first.
* Any other value it cannot write stops the fit before anything is created, in one line that names the key.
* ``config.yaml`` records the loggers as given: where a run wrote (the version it claimed, the folder several loggers
  share) is not a setting, so a rerun from it gets a folder of its own.
"""

from __future__ import annotations

import functools
import numbers
import operator
import types
import typing

import yaml
from jsonargparse import ArgumentParser
from jsonargparse.typing import register_type

from litstarter.errors import UsageError

#: What jsonargparse writes in place of a value it cannot serialise.
UNSERIALIZABLE = "Unable to serialize instance"


def _as_number(value) -> numbers.Number:
    """A YAML or command-line value as an int or a float; anything else is refused (jsonargparse tries the next
    type of a union on ``ValueError``)."""
    if isinstance(value, str):
        value = yaml.safe_load(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"expected a number, got {value!r}")
    return value


def register_config_types() -> None:
    """Teach jsonargparse the types above (once per process is enough; again is harmless)."""
    register_type(numbers.Number, serializer=lambda value: value, deserializer=_as_number)


def _int_before_float(hint):
    """``hint`` with ``int`` tried before ``float``, where it is a union of both that has them the other way.

    Rebuilt with ``|`` (``types.UnionType``), which no cache reorders, on Python 3.10 to 3.14 alike: ``Union[...]``
    would hand back the cached float-first union again.
    """
    args = typing.get_args(hint)
    if typing.get_origin(hint) not in (typing.Union, types.UnionType) or int not in args or float not in args:
        return hint
    if args.index(int) < args.index(float):
        return hint
    swapped = (float if a is int else int if a is float else a for a in args)
    return functools.reduce(operator.or_, swapped)


def keep_counts_as_ints(parser: ArgumentParser, prefix: str = "trainer.") -> None:
    """Have the parser read ``1`` as the int ``1`` for every argument under ``prefix`` typed as int-or-float.

    jsonargparse keeps an argument's type hint in the private ``ActionTypeHint._typehint``, read from the parser's
    private ``_actions``; this is the one place we touch them (there is no public way to change an added argument's
    type).
    """
    # tests/test_compat.py: "jsonargparse ActionTypeHint._typehint"
    # tests/test_compat.py: "argparse ArgumentParser._actions"
    for action in parser._actions:
        if action.dest.startswith(prefix) and hasattr(action, "_typehint"):
            action._typehint = _int_before_float(action._typehint)


def unwritable_values(dumped: str) -> list[tuple[str, str]]:
    """``(dotted key, value)`` for every value that a dumped config could not write."""
    found: list[tuple[str, str]] = []

    def walk(node, key: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{key}.{k}" if key else str(k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{key}[{i}]")
        elif isinstance(node, str) and node.startswith(UNSERIALIZABLE):
            found.append((key, node[len(UNSERIALIZABLE) :].strip()))

    walk(yaml.safe_load(dumped), "")
    return found


def check_config_writes(dumped: str) -> None:
    """Refuse a config whose ``config.yaml`` could not run again.

    Raises:
        UsageError: Naming the first key and value that cannot be written, and the forms that can.
    """
    unwritable = unwritable_values(dumped)
    if unwritable:
        key, value = unwritable[0]
        raise UsageError(
            f"{key}: config.yaml cannot record {value} (jsonargparse cannot write its type), so the run could not be"
            " repeated from it; give it as a plain number, string, list or mapping, or as a class_path with init_args"
        )
