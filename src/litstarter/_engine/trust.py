"""Importing a class that a file names (a checkpoint's backbone, a config's class path) runs its module's code,
so a class from outside this package, torch, torchvision and Lightning is imported only when the user trusts the
file (``--trust_model``)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from collections.abc import Mapping

from litstarter.errors import BadInputError, UsageError

#: Class paths under this prefix are this package's own code.
OWN_PREFIX = __name__.split(".")[0] + "."
#: Packages a file may name classes from without trust: this package, torch, torchvision and Lightning.
TRUSTED_PACKAGES = (OWN_PREFIX[:-1], "torch", "torchvision", "lightning", "pytorch_lightning")
TRUSTED_IN_WORDS = f"{', '.join(TRUSTED_PACKAGES[:3])} and Lightning"


def _is_trusted(class_path: str) -> bool:
    return class_path.split(".")[0] in TRUSTED_PACKAGES


class UntrustedCodeError(BadInputError):
    """A file names a class from outside the trusted packages, and the user did not say they trust it (exit 1)."""


def import_class(class_path: str, base: type, trust: bool, what: str, kind: str | None = None) -> type:
    """The subclass of ``base`` that ``class_path`` (``package.module.Class``) names; nothing else is returned.

    Args:
        class_path: ``package.module.Class``.
        base: What the class must subclass (``nn.Module`` for a backbone).
        trust: Allow a class from outside the trusted packages (importing its module runs that module's code).
        what: The setting that names it, for the messages (``"model.backbone"``).
        kind: ``base`` in words (``"nn.Module"``); its class name by default.

    Raises:
        UntrustedCodeError: A class outside the trusted packages without ``trust``.
        UsageError: The module does not import, or the name is not a subclass of ``base``.
    """
    module_name, _, attribute = class_path.rpartition(".")
    if not _is_trusted(class_path) and not trust:
        raise UntrustedCodeError(
            f"{what} is {class_path}, code from outside {TRUSTED_IN_WORDS}: loading it imports and runs that module."
            " Pass --trust_model only if you trust whoever wrote it"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise UsageError(
            f"{what} {class_path!r}: cannot import {module_name!r} ({err}); is your module installed or on PYTHONPATH?"
        ) from None
    cls = getattr(module, attribute, None)
    if not (inspect.isclass(cls) and issubclass(cls, base)):
        raise UsageError(f"{what} {class_path!r} is not an {kind or base.__name__} subclass (got {type(cls).__name__})")
    return cls


#: Keys whose string value jsonargparse imports.
CLASS_PATH_KEYS = ("class_path", "_class_path")
#: Keys whose strings are names, never imported (a class called ``os.path`` is no module).
NAME_KEYS = ("class_names",)
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


def _importable_dotted(value: str) -> bool:
    """``value`` reads as ``module.Class`` and its top-level module exists (``find_spec`` runs no module code)."""
    if not _DOTTED.fullmatch(value):
        return False
    try:
        return importlib.util.find_spec(value.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def named_classes(node, key: str = "") -> list[tuple[str, str]]:
    """``(dotted key, class path)`` for every class a stored config could import: each ``class_path`` and
    ``_class_path``, and any other string that names an importable ``module.Class`` (``model.backbone``)."""
    found: list[tuple[str, str]] = []
    if hasattr(node, "as_dict"):  # a jsonargparse Namespace
        node = node.as_dict()
    items = node.items() if isinstance(node, Mapping) else enumerate(node) if isinstance(node, list | tuple) else ()
    for k, value in items:
        where = f"{key}.{k}" if key else str(k)
        if str(k) in NAME_KEYS:
            continue
        if isinstance(value, str) and (str(k) in CLASS_PATH_KEYS or _importable_dotted(value)):
            found.append((where, value))
        else:
            found += named_classes(value, where)
    return found


def check_stored_classes(stored: Mapping, named_by_user: set[str], trust: bool, source: str) -> None:
    """Refuse a class that a file names (a checkpoint's hyper-parameters) before anything imports it, unless it is
    from a trusted package, the user named it themselves, or the user passed ``--trust_model``.

    Raises:
        UntrustedCodeError: Naming the key and the class.
    """
    if trust:
        return
    for where, class_path in named_classes(stored):
        if not _is_trusted(class_path) and class_path not in named_by_user:
            raise UntrustedCodeError(
                f"{source} names {where}: {class_path}, code from outside {TRUSTED_IN_WORDS} that your config does"
                " not name: loading it would import and run that module. Pass"
                " --trust_model only if you trust whoever wrote the file"
            )
