"""What every task's network shares: the 0..255 input normalised inside the network (:class:`ImageNetwork`), and
the hyper-parameters that fix a network's shape (:func:`architecture_of`), from which :mod:`.build` rebuilds it.
Each task's head subclasses it: :mod:`.classifier`, :mod:`.segmenter`, :mod:`.detector`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import torch
from torch import nn

from litstarter.errors import UsageError

#: The task hyper-parameters that fix the network's shape (recorded so ``weights.pt`` can load). ``image_size`` is
#: one of them: ``small_cnn``'s stem downsamples by a factor chosen from it.
ARCHITECTURE_KEYS = ("backbone", "backbone_kwargs", "num_classes", "in_channels", "dropout", "image_size")
#: A segmentation task's architecture key (``null`` picks the widths): its network is a ``Segmenter``.
DECODER_KEY = "decoder_channels"
#: A detection task's: its network is a ``Detector`` (with its thresholds, its pyramid's width and depth and its
#: head's depth).
DETECTION_KEYS = (
    "detector",
    "score_threshold",
    "nms_iou",
    "max_detections",
    "fpn_channels",
    "fpn_levels",
    "head_convs",
)
#: The shape keys added since checkpoints were first written, and the shape a checkpoint without one had.
UNRECORDED = {"fpn_levels": 3, "head_convs": 4}


def architecture_of(hparams: Mapping) -> dict:
    """The :data:`ARCHITECTURE_KEYS` of a checkpoint's ``hyper_parameters`` (and a task's own shape keys where they
    hold them: :data:`DECODER_KEY`, :data:`DETECTION_KEYS`): what :func:`litstarter.models.build.build_network`
    takes."""
    architecture = {k: hparams.get(k) for k in ARCHITECTURE_KEYS}
    architecture |= {k: hparams[k] for k in (DECODER_KEY, *DETECTION_KEYS) if k in hparams}
    return architecture


class ImageNetwork(nn.Module):
    """Images as they come off the cache, 0..255 in any dtype, to logits (no softmax). Normalisation lives inside
    the network as buffers: every checkpoint and export carries the preprocessing training used, and batches travel
    to the device as uint8, a quarter of the bytes of float32. Subclasses add the backbone and the head.

    Args:
        mean: Per-channel mean on the 0..1 scale.
        std: Per-channel standard deviation on the 0..1 scale.
    """

    #: The files this network cannot be saved as (``model.pt2``: why, in one line); none for most networks.
    export_refuses: ClassVar[dict[str, str]] = {}
    #: Whether exports trace one image and loop over a batch's images (a network whose output per image depends
    #: on the data, as a detector's NMS does); otherwise they capture the whole batch.
    export_per_image: ClassVar[bool] = False

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        if len(mean) != len(std):
            raise ValueError(f"mean has {len(mean)} channels but std has {len(std)}")
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1) * 255.0)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1) * 255.0)

    def set_memory_options(self, gradient_checkpointing: bool = False, channels_last: bool = False) -> None:
        """Recompute the backbone's activations in backward (it must have ``set_grad_checkpointing``), and/or keep
        the weights in NHWC layout."""
        if gradient_checkpointing:
            if not hasattr(self.backbone, "set_grad_checkpointing"):
                name = type(self.backbone).__name__
                raise UsageError(
                    f"model.gradient_checkpointing=true but backbone {name} has no set_grad_checkpointing()"
                )
            self.backbone.set_grad_checkpointing(True)
        if channels_last:
            self.to(memory_format=torch.channels_last)

    def set_normalization(self, mean: Sequence[float], std: Sequence[float]) -> None:
        """Overwrite the normalisation buffers (0..1 scale), e.g. with statistics of new data."""
        self.mean.copy_(torch.as_tensor(mean, dtype=torch.float32).view(1, -1, 1, 1) * 255.0)
        self.std.copy_(torch.as_tensor(std, dtype=torch.float32).view(1, -1, 1, 1) * 255.0)

    def normalization(self) -> tuple[list[float], list[float]]:
        """Per-channel ``(mean, std)`` on the 0..1 scale, as :meth:`set_normalization` takes them."""
        return (self.mean.flatten() / 255.0).tolist(), (self.std.flatten() / 255.0).tolist()

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W)`` 0..255 -> zero-mean, unit-variance float32."""
        return (x.float() - self.mean) / self.std
