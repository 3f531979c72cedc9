"""Checkpoint plumbing: safe loading (only ever ``torch.load(..., weights_only=True)``), errors that name what does
not fit, and the one home of ``torch.compile``'s ``_orig_mod.`` key prefix (a compiled run's checkpoints are saved
without it, and load into a compiled or a plain network alike).
"""

from __future__ import annotations

import os
import pickle
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import torch
from torch import nn

from litstarter.errors import BadInputError, UsageError


class CheckpointError(BadInputError, ValueError):
    """A checkpoint or weights file that cannot be used as asked; the message names the file and the problem."""


def load_torch_file(path: str | os.PathLike, mmap: bool = False) -> object:
    """``torch.load(path, weights_only=True)`` on the CPU, with errors that name the file.

    Args:
        path: The file.
        mmap: Map the tensors from the file instead of reading them (a cheap look at a large checkpoint).

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        CheckpointError: If the file holds anything but tensors and plain containers (its pickle could run
            code, so it is refused), or is not a torch file at all.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"checkpoint not found: {path}")
    with open(path, "rb") as f:
        head = f.read(2)
    if not zipfile.is_zipfile(path) and head[:1] != b"\x80":  # neither torch's zip format nor a legacy pickle
        raise CheckpointError(f"cannot read {path} as a torch file: it is neither a torch archive nor a pickle")
    mmap = mmap and zipfile.is_zipfile(path)  # a legacy (non-zip) file cannot be mapped: read it, still weights-only
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as err:
        raise CheckpointError(
            f"refusing to load {path}: it holds more than tensors and plain containers ({refused_content(err)}), and"
            " loading it could run code hidden in it. Use a checkpoint that litstarter or Lightning saved, or"
            " re-save the weights you trust as a plain state_dict."
        ) from None
    except (RuntimeError, EOFError, OSError) as err:
        if "magic number" in str(err):  # a pickle, but not one torch.save wrote
            raise CheckpointError(
                f"cannot read {path} as a torch file: it is a plain pickle (pickle.dump), not what torch.save writes;"
                " a checkpoint comes from Lightning's ModelCheckpoint or torch.save"
            ) from None
        raise CheckpointError(f"cannot read {path} as a torch file: {err}") from None


def refused_content(err: pickle.UnpicklingError) -> str:
    """What ``weights_only=True`` refused, e.g. ``unsupported GLOBAL posix.system``, without torch's advice to load
    with ``weights_only=False`` (the very thing that would run the code)."""
    for line in str(err).splitlines():
        line = line.strip()
        if "GLOBAL" in line or line.startswith(("Unsupported", "Unpickler error")):
            return line.removeprefix("Trying to load ").rstrip(".")
    return type(err).__name__


def state_dict_differences(
    model: nn.Module, state_dict: Mapping[str, torch.Tensor]
) -> tuple[list[str], list[str], list[str]]:
    """``(missing, unexpected, mismatched)`` keys of ``state_dict`` against ``model``, before loading anything
    (``load_state_dict(strict=False)`` would still raise a bare ``RuntimeError`` on a shape mismatch).

    ``mismatched`` entries read ``key: file (shape) vs model (shape)``.
    """
    expected = model.state_dict()
    missing = [key for key in expected if key not in state_dict]  # in the model's order
    unexpected = [key for key in state_dict if key not in expected]  # in the file's order
    mismatched = [
        f"{key}: file {tuple(state_dict[key].shape)} vs model {tuple(expected[key].shape)}"
        for key in expected
        if key in state_dict and tuple(state_dict[key].shape) != tuple(expected[key].shape)
    ]
    return missing, unexpected, mismatched


def load_state_dict_checked(model: nn.Module, state_dict: Mapping[str, torch.Tensor], source: str) -> None:
    """``model.load_state_dict(state_dict)``, but first list every missing, unexpected or mis-shaped key.

    Args:
        model: The module to fill.
        state_dict: Tensors keyed as in ``model.state_dict()``.
        source: What the weights came from (a path, a description); it leads the error message.

    Raises:
        CheckpointError: If the keys or shapes differ; the message names them, e.g. a head sized for another
            number of classes shows up as ``head.weight: file (5, 128) vs model (10, 128)``.
    """
    missing, unexpected, mismatched = state_dict_differences(model, state_dict)
    problems = []
    for label, items in (("shape mismatch", mismatched), ("missing keys", missing), ("unexpected keys", unexpected)):
        if items:
            shown = ", ".join(items[:8]) + (f", ... ({len(items)} in all)" if len(items) > 8 else "")
            problems.append(f"{label}: {shown}")
    if problems:
        raise CheckpointError(
            f"{source} does not fit the model it should load into (a different architecture or number of "
            f"classes?): {'; '.join(problems)}"
        )
    model.load_state_dict(state_dict)


#: What ``torch.compile`` puts before the parameter names of the module it wraps.
COMPILED_PREFIX = "_orig_mod."


def uncompiled_keys(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``state`` with the compiler's ``_orig_mod.`` prefix removed from every key."""
    return {k.replace(COMPILED_PREFIX, ""): v for k, v in state.items()}


def match_keys(state: Mapping[str, torch.Tensor], own_keys: Iterable[str]) -> dict[str, torch.Tensor]:
    """``state`` keyed as ``own_keys`` are (compiled or not), whichever way ``state`` was saved."""
    own = {k.replace(COMPILED_PREFIX, ""): k for k in own_keys}
    return {own.get(key, key): v for key, v in uncompiled_keys(state).items()}


def compile_child(parent: nn.Module, name: str, compile_args: bool | dict) -> None:
    """Replace ``parent.<name>`` by its ``torch.compile`` (``compile_args``: ``True`` or ``torch.compile`` keyword
    arguments); nothing if falsy or already compiled."""
    child = getattr(parent, name)
    if compile_args and not hasattr(child, "_orig_mod"):
        setattr(parent, name, torch.compile(child, **(compile_args if isinstance(compile_args, dict) else {})))


def uncompile_child(parent: nn.Module, name: str) -> None:
    """Put the plain module back in ``parent.<name>`` (the same parameters)."""
    child = getattr(parent, name)
    if hasattr(child, "_orig_mod"):  # tests/test_compat.py: "torch OptimizedModule._orig_mod"
        setattr(parent, name, child._orig_mod)
