"""Importing a class that a file names (a checkpoint's backbone, a config's class path) runs its module's code,
so a class from outside this package is imported only when the user trusts the file (``--trust_model``)."""

from __future__ import annotations

import importlib
import inspect

from .errors import BadInputError, UsageError

#: Class paths under this prefix are this package's own code: they import without trust.
OWN_PREFIX = __name__.split(".")[0] + "."


class UntrustedCodeError(BadInputError):
    """A file names a class from outside this package, and the user did not say they trust it (exit 1)."""


def import_class(class_path: str, base: type, trust: bool, what: str, kind: str | None = None) -> type:
    """The subclass of ``base`` that ``class_path`` (``package.module.Class``) names; nothing else is returned.

    Args:
        class_path: ``package.module.Class``.
        base: What the class must subclass (``nn.Module`` for a backbone).
        trust: Allow a class from outside this package (importing its module runs that module's code).
        what: The setting that names it, for the messages (``"model.backbone"``).
        kind: ``base`` in words (``"nn.Module"``); its class name by default.

    Raises:
        UntrustedCodeError: A class outside this package without ``trust``.
        UsageError: The module does not import, or the name is not a subclass of ``base``.
    """
    module_name, _, attribute = class_path.rpartition(".")
    if not class_path.startswith(OWN_PREFIX) and not trust:
        raise UntrustedCodeError(
            f"{what} is {class_path}, code from outside {OWN_PREFIX[:-1]}: loading it imports and runs that module."
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
