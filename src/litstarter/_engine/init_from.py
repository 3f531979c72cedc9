"""``model.init_from``: start a network from another run's weights. The tensors that fit load, the head is replaced
when the classes differ, and a report says what happened. Nothing that silently trains from scratch.

Accepted files (all read with ``torch.load(..., weights_only=True)``):

* a litstarter (Lightning) checkpoint: ``{"state_dict": {"net.backbone...", "net.head..."}, "hyper_parameters"}``;
* an exported ``weights.pt`` (``Classifier.state_dict()``: ``backbone.*``, ``head.*``);
* a backbone state_dict (keys as in ``create_backbone(...).state_dict()``, e.g. a torchvision weights file).

The normalisation buffers (``mean``, ``std``) are not taken over: this run normalises with its own data's statistics.
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from .checkpoints import CheckpointError, load_torch_file, uncompiled_keys

log = logging.getLogger(__name__)

HEAD_PREFIX = "head."
BACKBONE_PREFIX = "backbone."
# Set per run from the data (setup); never taken from another run.
NORMALIZATION_KEYS = ("mean", "std")


@dataclass
class TransferReport:
    """What ``init_from`` loaded.

    Args:
        source: The file.
        matched: Keys loaded (same name, same shape).
        missing: Keys of the network the file lacks (they keep their fresh init).
        unexpected: Keys of the file the network lacks (ignored).
        mismatched: ``"key: file (shape) vs model (shape)"`` for names present in both with other shapes.
        head_replaced: Why the head was not loaded (a fresh one trains), or ``None`` if it loaded.
        scalars: The matched keys that are 0-d buffers (``num_batches_tracked``): they fit any network with a batch
            norm there, so they never count as evidence that the file fits.
    """

    source: str
    matched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    head_replaced: str | None = None

    scalars: list[str] = field(default_factory=list)

    @property
    def backbone_matched(self) -> list[str]:
        """The loaded backbone weight tensors (scalar buffers such as ``num_batches_tracked`` don't count)."""
        return [k for k in self.matched if k.startswith(BACKBONE_PREFIX) and k not in self.scalars]

    def summary(self) -> str:
        """One line of counts, and the head's fate."""
        head = f"head replaced: {self.head_replaced}" if self.head_replaced else "head loaded"
        real = len(self.matched) - len(self.scalars)
        return (
            f"init_from {self.source}: {real} tensors loaded ({len(self.backbone_matched)} backbone; scalar buffers"
            f" not counted), {len(self.missing)} missing, {len(self.unexpected)} unexpected,"
            f" {len(self.mismatched)} shape-mismatched; {head}"
        )


def _network_state(obj: object, path: Path) -> tuple[dict[str, torch.Tensor], dict]:
    """``(state keyed like Classifier.state_dict(), hyper_parameters or {})`` from whatever the file holds."""
    if isinstance(obj, dict) and "state_dict" in obj:
        raw = obj["state_dict"]
        if not isinstance(raw, dict):
            raise CheckpointError(
                f"init_from {path}: its 'state_dict' is a {type(raw).__name__}, not a dict of tensors"
            )
        state = {k.removeprefix("net."): v for k, v in raw.items() if k.startswith("net.")}
        if not state:
            raise CheckpointError(
                f"init_from {path} is a checkpoint without litstarter network weights (no 'net.*' keys); found"
                f" {sorted(raw)[:8]}"
            )
        hparams = obj.get("hyper_parameters") or {}
        return state, dict(hparams) if isinstance(hparams, dict) else {}
    if isinstance(obj, dict) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        if any(k.startswith((BACKBONE_PREFIX, HEAD_PREFIX)) for k in obj):  # Classifier.state_dict(), weights.pt
            return dict(obj), {}
        return {BACKBONE_PREFIX + k: v for k, v in obj.items()}, {}  # a bare backbone state_dict
    found = sorted(obj)[:8] if isinstance(obj, dict) else type(obj).__name__
    raise CheckpointError(
        f"init_from {path} is neither a litstarter checkpoint (a dict with 'state_dict') nor a state_dict (a dict of"
        f" tensors); found {found}"
    )


def head_replacement_reason(
    state: dict[str, torch.Tensor], own: dict[str, torch.Tensor], theirs: list | None, class_names: list[str]
) -> str | None:
    """Why the file's head cannot be used (the true reason, from the names and the shapes), or ``None``."""
    weight = HEAD_PREFIX + "weight"
    if not any(k.startswith(HEAD_PREFIX) for k in state):
        return "the file has no head"
    if theirs is not None and list(theirs) != list(class_names):
        return f"the classes differ (checkpoint {list(theirs)}, this run {list(class_names)})"
    if weight in state and weight in own and state[weight].shape != own[weight].shape:
        (k_file, d_file), (k_own, d_own) = state[weight].shape[:2], own[weight].shape[:2]
        if k_file != k_own:
            return f"num_classes differs (checkpoint {k_file}, this run {k_own})"
        return (
            f"the head takes {d_file} features in the checkpoint but {d_own} here: the backbones differ in their"
            " output width"
        )
    if any(k in own and state[k].shape != own[k].shape for k in state if k.startswith(HEAD_PREFIX)):
        return "the head's shape differs"
    return None


def load_matching_weights(net: nn.Module, path: str | os.PathLike, class_names: list[str]) -> TransferReport:
    """Load into ``net`` (a :class:`~litstarter.models.Classifier`) every tensor of ``path`` that fits it.

    The head is loaded only if it has the same shape and, when the file records them, the same class names;
    otherwise the fresh head stays (``head_replaced`` says why). ``report.summary()`` gives the counts; the keys
    go to this module's log at debug level; a backbone that loads only in part is a warning.

    Args:
        net: The network to fill; its keys are ``backbone.*``, ``head.*``, ``mean``, ``std``.
        path: The checkpoint or weights file.
        class_names: This run's class names, in label order.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        CheckpointError: If the file is not a checkpoint or state_dict, or nothing (or nothing of the backbone)
            fits: then training would silently start from scratch.
    """
    path = Path(path)
    state, hparams = _network_state(load_torch_file(path), path)
    state = {k: v for k, v in uncompiled_keys(state).items() if k not in NORMALIZATION_KEYS}
    own = {k: v for k, v in net.state_dict().items() if k not in NORMALIZATION_KEYS}
    report = TransferReport(source=str(path))

    head_keys = [k for k in state if k.startswith(HEAD_PREFIX)]
    report.head_replaced = head_replacement_reason(state, own, hparams.get("class_names"), class_names)
    if report.head_replaced:
        for key in head_keys:
            del state[key]
        own = {k: v for k, v in own.items() if not k.startswith(HEAD_PREFIX)}

    for key, value in state.items():
        if key not in own:
            report.unexpected.append(key)
        elif value.shape != own[key].shape:
            report.mismatched.append(f"{key}: file {tuple(value.shape)} vs model {tuple(own[key].shape)}")
        else:
            report.matched.append(key)
            if value.ndim == 0:
                report.scalars.append(key)
    report.missing = [k for k in own if k not in state]

    if not report.backbone_matched:
        trained_with = f" It was trained with backbone {hparams['backbone']!r}." if "backbone" in hparams else ""
        what = "No weight tensor" if len(report.matched) == len(report.scalars) else "No backbone weight tensor"
        raise CheckpointError(
            f"{what} of init_from {path} fits this model ({report.summary()}).{trained_with} Set model.backbone"
            f" (and model.backbone_kwargs) to the architecture the file was trained with. Examples: missing"
            f" {report.missing[:3]}, unexpected {report.unexpected[:3]}, shape-mismatched {report.mismatched[:3]}"
        )
    net.load_state_dict({k: state[k] for k in report.matched}, strict=False)

    for label, keys in (
        ("loaded", report.matched),
        ("missing (fresh init)", report.missing),
        ("unexpected (ignored)", report.unexpected),
        ("shape-mismatched (fresh init)", report.mismatched),
    ):
        for key in keys:
            log.debug("init_from %s: %s", label, key)
    partial = [k for k in report.missing if k.startswith(BACKBONE_PREFIX)]
    partial += [m for m in report.mismatched if m.startswith(BACKBONE_PREFIX)]
    if partial:
        warnings.warn(
            f"init_from {path}: only part of the backbone loaded; {len(partial)} backbone tensors keep their fresh"
            f" init, e.g. {partial[:3]} (debug logging lists them all)",
            stacklevel=2,
        )
    return report
