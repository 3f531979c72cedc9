"""Every run's ``config.yaml`` runs again: the values jsonargparse cannot write by itself, and the check for any other.

* ``numbers.Number`` (torchvision's ``RandomRotation(degrees=10)``, ``RandomAffine``, ...) is no type jsonargparse
  knows: it neither parses ``degrees: 10`` from the command line nor writes it back (``config.yaml`` would say
  ``degrees: Unable to serialize instance 10``). Registered here as what it is: a plain int or float.
* Any other value it cannot write stops the fit before anything is created, in one line that names the key.
* ``config.yaml`` records the loggers as given: where a run wrote (the version it claimed, the folder several loggers
  share) is not a setting, so a rerun from it gets a folder of its own.
"""

from __future__ import annotations

import numbers

import yaml
from jsonargparse.typing import register_type

from ..errors import UsageError

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
