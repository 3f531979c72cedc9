"""Checks the CLI makes before a run does any work, so that a user's mistake is one sentence, not a traceback
from deep inside Lightning halfway through: the accelerator asked for exists, the checkpoint given is one of
ours and fits this model, the data module provides what the model is built from.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch
from torch import nn

from litstarter.errors import UsageError

from ..checkpoints import CheckpointError, load_torch_file, uncompiled_keys
from ..targets import target_kind

log = logging.getLogger("litstarter")

#: ``ckpt_path`` values that Lightning resolves itself (no file to check).
LIGHTNING_CKPT_NAMES = ("best", "last", "hpc", "registry")


def check_accelerator_present(config) -> None:
    """A GPU preset (``trainer.accelerator: gpu``/``cuda``/``mps``) on a machine without that device is a sentence.

    Raises:
        UsageError: Naming the setting and what to use instead.
    """
    trainer = config.get("trainer") or {}
    accelerator = str(trainer.get("accelerator") or "auto").lower()
    if accelerator in ("gpu", "cuda") and not torch.cuda.is_available():
        raise UsageError(
            f"trainer.accelerator is {accelerator!r} (e.g. from configs/trainer/gpu.yaml), but torch sees no CUDA GPU"
            f" on this machine (torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}). Use"
            " --trainer.accelerator cpu (or auto); docs/troubleshooting.md lists why a GPU goes unseen"
        )
    if accelerator == "mps" and not torch.backends.mps.is_available():
        raise UsageError(
            "trainer.accelerator is 'mps', but this machine has no Apple GPU; use --trainer.accelerator cpu"
        )


#: What every data module provides; the CLI links each into the model (``litstarter.data.base`` says more).
DATA_FACTS = ("num_classes", "channels", "image_size", "class_names")


def data_fact(datamodule, name: str):
    """``datamodule.<name>``, one of :data:`DATA_FACTS`, for a link into the model.

    Raises:
        UsageError: The data module lacks it (naming the module and the four facts).
    """
    if getattr(datamodule, name, None) is None:
        raise UsageError(
            f"data module {type(datamodule).__name__} has no {name}; a data module provides {', '.join(DATA_FACTS)}"
            " (the model is built from them; see litstarter.data.base)"
        )
    return getattr(datamodule, name)


def num_classes_of(datamodule) -> int:
    """``data.num_classes``, linked into ``model.num_classes``: fewer than the targets' kind needs (two classes, two
    labels, one target column, one class of boxes; one output for a kind of the project's own) is the data's error.

    Raises:
        UsageError: Naming the data's folder (or source) and its one class, not a model setting the user never set.
    """
    n = int(data_fact(datamodule, "num_classes"))
    try:
        kind = target_kind(getattr(datamodule, "target_kind", "class"))
    except KeyError:  # a kind the engine does not know: its task checks its own outputs
        kind = None
    if n >= (kind.fewest if kind is not None else 1):
        return n
    source = getattr(datamodule, "root", None) or getattr(datamodule, "labels", None) or type(datamodule).__name__
    names = list(getattr(datamodule, "class_names", None) or [])
    if kind is None or not kind.single_class and kind.noun != "label":
        noun, fewest = (kind.noun, kind.fewest) if kind is not None else ("output", 1)
        nouns = noun if n == 1 else noun + ("es" if noun.endswith("s") else "s")
        raise UsageError(f"'{source}' has {n} {nouns} {names}: the data needs at least {fewest}")
    if kind.noun == "label":  # labels from a file's rows, not from folders
        raise UsageError(
            f"'{source}': data.labels names {n} label(s) {names}; a multi-label classifier needs at least 2 (rows"
            " naming them; a row with no label is an image with none)"
        )
    raise UsageError(
        f"'{source}' has {n} class{'' if n == 1 else 'es'} {names}: a classifier needs at least 2 (one folder per"
        " class, each holding that class's images)"
    )


def check_checkpoint_file(ckpt_path: str | os.PathLike | None) -> dict | None:
    """The ``--ckpt_path`` checkpoint, read with ``weights_only=True`` (tensors memory-mapped), or ``None`` when
    there is no file to check (``best``, ``last``, a URL).

    Runs before LightningCLI reads the checkpoint's hyper-parameters: Lightning would answer a text file with
    ``KeyError``, and a code-running pickle with torch's advice to load it with ``weights_only=False``.

    Raises:
        UsageError: The path does not exist.
        CheckpointError: The file is not a torch file, could run code, or is not a Lightning checkpoint.
    """
    if ckpt_path is None or str(ckpt_path) in LIGHTNING_CKPT_NAMES or "://" in str(ckpt_path):
        return None
    path = Path(ckpt_path)
    if not path.is_file():
        raise UsageError(f"--ckpt_path '{path}' does not exist" + (" (it is a folder)" if path.is_dir() else ""))
    checkpoint = load_torch_file(path, mmap=True)
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("state_dict"), dict):
        found = sorted(map(str, checkpoint))[:8] if isinstance(checkpoint, dict) else type(checkpoint).__name__
        raise CheckpointError(
            f"--ckpt_path '{path}' is not a Lightning checkpoint (a dict with 'state_dict'); found {found}. For"
            " weights.pt or a state_dict use model.init_from"
        )
    return checkpoint


def check_checkpoint_fits(ckpt_path: str | os.PathLike | None, model: nn.Module) -> None:
    """Before ``fit --ckpt_path`` / ``validate`` / ``test`` / ``predict`` loads a checkpoint into ``model``: its
    weights fit key for key (a 10-class checkpoint on 5-class data is a sentence, not a size mismatch).

    Raises:
        UsageError / CheckpointError: As :func:`check_checkpoint_file`, or naming the classes or keys that differ.
    """
    checkpoint = check_checkpoint_file(ckpt_path)
    if checkpoint is None:
        return
    path = Path(ckpt_path)
    state, expected = uncompiled_keys(checkpoint["state_dict"]), uncompiled_keys(model.state_dict())
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    mismatched = [
        f"{k}: file {tuple(state[k].shape)} vs model {tuple(v.shape)}"
        for k, v in expected.items()
        if k in state and tuple(state[k].shape) != tuple(v.shape)
    ]
    hparams = checkpoint.get("hyper_parameters") or {}
    theirs, ours = hparams.get("num_classes"), getattr(model, "hparams", {}).get("num_classes")
    if theirs is not None and ours is not None and theirs != ours:
        raise CheckpointError(
            f"--ckpt_path '{path}' was trained on {theirs} classes {list(hparams.get('class_names') or [])}, but the"
            f" data here has {ours} {list(model.hparams.get('class_names') or [])}. Use it with data of the same"
            " classes, or start a new fit from it with model.init_from (the head is then replaced)"
        )
    if missing or unexpected or mismatched:
        shown = [f"shape {m}" for m in mismatched] + [f"missing {k}" for k in missing]
        shown += [f"unexpected {k}" for k in unexpected]
        trained = f" (trained with backbone {hparams['backbone']!r})" if "backbone" in hparams else ""
        raise CheckpointError(
            f"--ckpt_path '{path}'{trained} does not fit this model: {', '.join(shown[:6])}"
            f"{f', ... ({len(shown)} in all)' if len(shown) > 6 else ''}. {_shape_hint(hparams, model)}"
        )


def _shape_hint(saved: dict, model: nn.Module) -> str:
    """What to set for ``model`` to take a checkpoint saved with hyper-parameters ``saved``: the shape keys that
    differ, where the model can say (a task's ``shape_differences``)."""
    differ = model.shape_differences(saved) if hasattr(model, "shape_differences") else []
    if differ:
        return f"Its shape keys differ: {', '.join(differ)}; set them as in the run that saved it"
    return "Set model.backbone (and backbone_kwargs) as in the run that saved it"


def check_validation_runs(trainer) -> None:
    """Refuse a fit that validates nothing (``trainer.limit_val_batches 0``) while a callback monitors a
    validation metric: Lightning would train the first epoch, then fail on the metric not being there.

    Raises:
        UsageError: Naming the option and the callbacks that monitor, and what to change.
    """
    limit = trainer.limit_val_batches
    if limit != 0 or isinstance(limit, bool):
        return
    monitors = sorted(
        {
            f"{type(c).__name__} ({c.monitor})"
            for c in trainer.callbacks
            if isinstance(getattr(c, "monitor", None), str) and c.monitor.startswith("val")
        }
    )
    if monitors:
        raise UsageError(
            f"trainer.limit_val_batches 0 runs no validation, but {', '.join(monitors)} monitor(s) a validation"
            " metric: give limit_val_batches > 0 (e.g. 0.1), or drop those callbacks"
        )
