"""Refuse model files that could run code when loaded, unless the user says they trust them.

``torch.export.load`` is not a safe loader: a ``.pt2`` archive can carry pickled weights or constants
(unpickled with ``weights_only=False``), a sample-inputs pickle that falls back to ``weights_only=False``,
Python objects, AOTInductor shared libraries, guard code that is compiled and run, call targets that are
resolved by attribute lookup from the ``torch`` module (``torch.os.system`` is one), and shape expressions
that go through ``sympy.sympify`` (an ``eval``). So before loading, :func:`check_pt2` reads the archive as
plain zip + JSON and accepts only what ``torch.export.save`` writes for a model like ours: raw tensor
weights and constants, ``torch.ops.aten`` / ``prims`` calls, plain shape symbols, no guard code.

TorchScript (``.ts``) archives are programs: ``torch.jit.load`` compiles and runs the code inside them,
and PyTorch's security policy says to treat them as code. They load only with ``trust_model=True``.
Checkpoints and ``weights.pt`` need no flag: they load with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

from litstarter.errors import BadInputError

TRUST_HINT = "pass --trust_model only if you made this file yourself or trust whoever did"

# What torch.export.save writes for one program named "model", relative to the archive's root folder.
_ALLOWED_MEMBERS = re.compile(
    r"(archive_format|archive_version|byteorder|\.data/version|\.data/serialization_id"
    r"|models/model\.json|data/sample_inputs/model\.pt"
    r"|data/weights/model_weights_config\.json|data/weights/weight_\d+"
    r"|data/constants/model_constants_config\.json|data/constants/tensor_\d+"
    r"|extra/[\w.\-]+)"
)
_ALLOWED_TARGET = re.compile(r"torch\.ops\.(aten|prims)\.(?!__)\w+\.(?!__)\w+|_operator\.getitem")
_SYMBOL = r"Symbol\('[a-z]\d+'(, (positive|integer|nonnegative)=(True|False))*\)|[a-z]\d+|\d+"
_ALLOWED_EXPR = re.compile(rf"({_SYMBOL})(\s*[-+*]\s*({_SYMBOL}))*")


class UntrustedModelError(BadInputError):
    """A model file that could run code when loaded; the message says what was found and how to proceed."""


def require_trust(path: Path, what: str, trust_model: bool) -> None:
    """Raise :class:`UntrustedModelError` for ``what`` unless ``trust_model``."""
    if not trust_model:
        raise UntrustedModelError(f"refusing to load {path}: {what}; {TRUST_HINT}")


def check_pt2(path: Path, data: bytes) -> None:
    """Raise :class:`UntrustedModelError` unless the ``.pt2`` archive in ``data`` holds only what is safe to load.

    Args:
        path: The file's path, for the message.
        data: The archive's bytes (the same bytes that will be loaded, so the file cannot change in between).
    """
    problems = list(_pt2_problems(data))
    if problems:
        shown = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
        raise UntrustedModelError(f"refusing to load {path}: it could run code when loaded ({shown}); {TRUST_HINT}")


def _pt2_problems(data: bytes) -> Iterator[str]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = archive.namelist()
    except (zipfile.BadZipFile, OSError) as err:
        yield f"not a .pt2 archive: {err}"
        return
    roots = {name.split("/", 1)[0] for name in names}
    if len(roots) != 1 or any("/" not in name for name in names):
        yield f"expected one root folder, found {sorted(roots)[:3]}"
        return
    root = roots.pop() + "/"
    members = {name[len(root) :]: name for name in names}
    extra = [m for m in members if not _ALLOWED_MEMBERS.fullmatch(m)]
    if extra:
        yield f"unexpected archive members {extra[:3]}"
    if "models/model.json" not in members:
        yield "no models/model.json"
        return
    for config, prefix in (
        ("data/weights/model_weights_config.json", "weight_"),
        ("data/constants/model_constants_config.json", "tensor_"),
    ):
        if config in members:
            yield from _payload_problems(archive.read(members[config]), config, prefix)
    if "data/sample_inputs/model.pt" in members:
        yield from _sample_inputs_problems(archive.read(members["data/sample_inputs/model.pt"]))
    yield from _program_problems(archive.read(members["models/model.json"]))


def _payload_problems(raw: bytes, config: str, prefix: str) -> Iterator[str]:
    try:
        entries = json.loads(raw)["config"]
        items = list(entries.items())
    except (ValueError, KeyError, TypeError, AttributeError):
        yield f"{config} is not a payload config"
        return
    for fqn, meta in items:
        if not isinstance(meta, dict) or meta.get("use_pickle") is not False:
            yield f"{fqn!r} in {config} is pickled"
        elif not re.fullmatch(rf"{prefix}\d+", str(meta.get("path_name"))):
            yield f"{fqn!r} in {config} is stored as {meta.get('path_name')!r}, not a raw tensor"


def _sample_inputs_problems(raw: bytes) -> Iterator[str]:
    import pickle

    import torch

    try:  # torch.export.load tries weights_only=True and falls back to a full unpickle: only the first may pass
        torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError) as err:
        reason = str(err).strip().splitlines()[0][:80] if str(err).strip() else type(err).__name__
        yield f"its sample inputs are not plain tensors ({reason})"


def _program_problems(raw: bytes) -> Iterator[str]:
    try:
        program = json.loads(raw)
    except ValueError:
        yield "models/model.json is not JSON"
        return
    if not isinstance(program, dict):
        yield "models/model.json is not an exported program"
        return
    if program.get("guards_code"):
        yield "it carries guard code"
    for key in program.get("range_constraints") or {}:
        if not re.fullmatch(r"[a-z]\d+", str(key)):
            yield f"shape symbol {str(key)[:60]!r}"
    for key, value in _walk(program):
        if key == "target" and isinstance(value, str) and not _ALLOWED_TARGET.fullmatch(value):
            yield f"call target {value[:60]!r}"
        elif key == "expr_str" and isinstance(value, str) and not _ALLOWED_EXPR.fullmatch(value.strip()):
            yield f"shape expression {value[:60]!r}"


def _walk(node: object) -> Iterator[tuple[str, object]]:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                yield str(key), value
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
