"""Rebuild the trained network of one of our Lightning checkpoints, without Lightning and without running pickled
code: from its ``hyper_parameters`` and its weights alone (``torch.load(..., weights_only=True)``)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from litstarter._engine.checkpoints import load_state_dict_checked, load_torch_file
from litstarter.errors import UsageError
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
        UsageError: If the file is no Lightning checkpoint (an export's artifact, a state dict, any other file).
        CheckpointError: If the file is refused by ``weights_only=True``, or its weights do not fit the architecture
            its hyper-parameters describe.
        UntrustedCodeError: For a backbone from outside this package without ``trust_model``.
    """
    refuse_other_files(path)
    checkpoint = load_torch_file(path)
    if not isinstance(checkpoint, dict) or not {"state_dict", "hyper_parameters"} <= checkpoint.keys():
        raise not_a_checkpoint(path, _held(checkpoint))
    hparams = dict(checkpoint["hyper_parameters"])
    hparams["task"] = str(checkpoint.get("task") or "single_label")  # the task's name, saved by the task
    hparams["answers"] = dict(checkpoint.get("answers") or {})  # the task's answers' state (thresholds, ...)
    net = build_network(hparams, trust_model=trust_model)
    state = {k.removeprefix("net."): v for k, v in checkpoint["state_dict"].items() if k.startswith("net.")}
    load_state_dict_checked(net, state, source=f"checkpoint {path}")
    return net.eval(), hparams


#: What an export or a torch program writes, by the entries of its zip archive: (entry, what the file is).
ARCHIVE_ENTRIES = (
    ("/code/", "a TorchScript program (as export's model.ts)"),
    ("/archive_format", "a torch.export program (as export's model.pt2)"),
    ("/models/", "a torch.export program (as export's model.pt2)"),
)


def not_a_checkpoint(path: str | os.PathLike, what: str) -> UsageError:
    """The one-line refusal of a file that is no checkpoint of ours: the file, what it is, what was expected."""
    lightning = what.startswith("a Lightning checkpoint")
    return UsageError(
        f"{path} is not {'a litstarter' if lightning else 'a Lightning'} checkpoint: it is {what}; expected a .ckpt"
        " that `litstarter fit` saved (<run>/checkpoints/*.ckpt)"
    )


def refuse_other_files(path: str | os.PathLike) -> None:
    """Refuse, from its first bytes or its zip entries and before ``torch.load`` reads it, a file that is no torch
    archive of a pickle: a TorchScript or torch.export program, an ONNX graph, text, anything else.

    Raises:
        UsageError: Naming the file, what it is, and that a ``.ckpt`` from fit was expected.
    """
    path = Path(path)
    if not path.is_file():
        return  # load_torch_file names a missing file
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except (zipfile.BadZipFile, OSError, ValueError) as err:
            raise not_a_checkpoint(path, f"a zip archive that cannot be read ({err})") from None
        for entry, what in ARCHIVE_ENTRIES:
            if any(entry in f"/{name}" for name in names):
                raise not_a_checkpoint(path, what)
        if not any(name.endswith("/data.pkl") or name == "data.pkl" for name in names):
            raise not_a_checkpoint(path, "a zip archive without torch's data.pkl")
        return
    with open(path, "rb") as f:
        head = f.read(64)
    if head[:1] == b"\x80":  # a legacy torch file or a pickle: load_torch_file reads it, weights only
        return
    raise not_a_checkpoint(path, _kind_of(path, head))


def _kind_of(path: Path, head: bytes) -> str:
    """What a file that is neither a zip archive nor a pickle is, from its suffix and first bytes."""
    if path.suffix.lower() == ".onnx":
        return "an ONNX graph (as export's model.onnx)"
    text = head.lstrip()
    if text[:1] in (b"{", b"["):
        return "JSON text"
    if not head:
        return "an empty file"
    if all(32 <= byte < 127 or byte in b"\t\r\n" for byte in head):
        return "a text file"
    return "neither a torch archive nor a pickle"


def _held(obj: object) -> str:
    """What a torch file that is no litstarter checkpoint holds."""
    import torch

    if not isinstance(obj, dict):
        return f"a torch file holding a {type(obj).__name__}"
    if obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        return "a state dict (weights alone, as export's weights.pt), without the hyper-parameters that rebuild it"
    if "pytorch-lightning_version" in obj:
        return "a Lightning checkpoint without 'hyper_parameters' (a litstarter task saves them)"
    return f"a torch file without 'state_dict' and 'hyper_parameters' (its keys: {sorted(map(str, obj))[:5]})"
