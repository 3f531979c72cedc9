"""Load weights safely: only ever ``torch.load(..., weights_only=True)``, with errors that name what does not fit.

A Lightning checkpoint made by litstarter is rebuilt here into the deployable :class:`Classifier` from its
``hyper_parameters`` alone, without Lightning and without running any pickled code.
"""

from __future__ import annotations

import os
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from litstarter.errors import BadInputError
from litstarter.models.classifier import Classifier, build_classifier


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
        raise FileNotFoundError(f"checkpoint not found: {path}")
    with open(path, "rb") as f:
        head = f.read(2)
    if not zipfile.is_zipfile(path) and head[:1] != b"\x80":  # neither torch's zip format nor a legacy pickle
        raise CheckpointError(f"cannot read {path} as a torch file: it is neither a torch archive nor a pickle")
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as err:
        raise CheckpointError(
            f"refusing to load {path}: it holds more than tensors and plain containers ({refused_content(err)}), and"
            " loading it could run code hidden in it. Use a checkpoint that litstarter or Lightning saved, or"
            " re-save the weights you trust as a plain state_dict."
        ) from None
    except (RuntimeError, EOFError, OSError) as err:
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


def classifier_from_checkpoint(path: str | os.PathLike, trust_model: bool = False) -> tuple[Classifier, dict]:
    """Rebuild the trained :class:`Classifier` (in eval mode) and return it with the checkpoint's hyper-parameters.

    Args:
        path: The checkpoint.
        trust_model: Build a backbone whose class lives outside this package (importing it runs its module).

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        CheckpointError: If the file is refused by ``weights_only=True``, is not a litstarter checkpoint, or its
            weights do not fit the architecture its hyper-parameters describe.
        UntrustedBackboneError: For a backbone from outside this package without ``trust_model``.
    """
    checkpoint = load_torch_file(path)
    if not isinstance(checkpoint, dict) or not {"state_dict", "hyper_parameters"} <= checkpoint.keys():
        found = sorted(checkpoint)[:10] if isinstance(checkpoint, dict) else type(checkpoint).__name__
        raise CheckpointError(
            f"{path} is not a litstarter checkpoint: expected a dict with 'state_dict' and 'hyper_parameters', "
            f"found {found}"
        )
    hparams = dict(checkpoint["hyper_parameters"])
    net = build_classifier(hparams, trust_model=trust_model)
    state = {k.removeprefix("net."): v for k, v in checkpoint["state_dict"].items() if k.startswith("net.")}
    load_state_dict_checked(net, state, source=f"checkpoint {path}")
    return net.eval(), hparams
