"""Rebuild the trained network of one of our Lightning checkpoints, without Lightning and without running pickled
code: from its ``hyper_parameters`` and its weights alone (``torch.load(..., weights_only=True)``)."""

from __future__ import annotations

import os

from litstarter._engine.checkpoints import CheckpointError, load_state_dict_checked, load_torch_file
from litstarter.models.build import build_network
from litstarter.models.network import ImageNetwork


def network_from_checkpoint(path: str | os.PathLike, trust_model: bool = False) -> tuple[ImageNetwork, dict]:
    """Rebuild the trained network (whatever the task's head: a :class:`~litstarter.models.Classifier`, a
    ``Segmenter``, a ``Detector``), in eval mode, and return it with the checkpoint's hyper-parameters.

    Args:
        path: The checkpoint.
        trust_model: Build a backbone whose class lives outside this package (importing it runs its module).

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        CheckpointError: If the file is refused by ``weights_only=True``, is not a litstarter checkpoint, or its
            weights do not fit the architecture its hyper-parameters describe.
        UntrustedCodeError: For a backbone from outside this package without ``trust_model``.
    """
    checkpoint = load_torch_file(path)
    if not isinstance(checkpoint, dict) or not {"state_dict", "hyper_parameters"} <= checkpoint.keys():
        found = sorted(checkpoint)[:10] if isinstance(checkpoint, dict) else type(checkpoint).__name__
        raise CheckpointError(
            f"{path} is not a litstarter checkpoint: expected a dict with 'state_dict' and 'hyper_parameters', "
            f"found {found}"
        )
    hparams = dict(checkpoint["hyper_parameters"])
    hparams["task"] = str(checkpoint.get("task") or "single_label")  # the task's name, saved by the task
    hparams["answers"] = dict(checkpoint.get("answers") or {})  # the task's answers' state (thresholds, ...)
    net = build_network(hparams, trust_model=trust_model)
    state = {k.removeprefix("net."): v for k, v in checkpoint["state_dict"].items() if k.startswith("net.")}
    load_state_dict_checked(net, state, source=f"checkpoint {path}")
    return net.eval(), hparams
