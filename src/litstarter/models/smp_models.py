"""segmentation-models-pytorch's models as our segmentation network (the ``smp`` extra): ``smp/<arch>/<encoder>``.

The whole model is smp's (its encoder and decoder, randomly initialised: pretrained encoders download from the
hub); around it, the normalisation every network of ours carries, and padding of the input to the multiple of 32
the encoders need (cropped off the logits again), so any ``image_size`` serves.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from litstarter.errors import UsageError
from litstarter.models.network import ImageNetwork

#: The input's sides are padded up to a multiple of this (the encoders' output stride).
STRIDE = 32


class SmpSegmenter(ImageNetwork):
    """Images ``(B, C, H, W)`` in 0..255 to per-pixel logits ``(B, K, H, W)`` through an smp model.

    Args:
        model: The smp model (its ``encoder`` is this network's ``backbone``).
        mean: Per-channel mean on the 0..1 scale.
        std: Per-channel standard deviation on the 0..1 scale.
    """

    def __init__(self, model: nn.Module, mean, std) -> None:
        super().__init__(mean, std)
        self.model = model
        self.backbone = model.encoder  # what freezing, the backbone's learning rate and init_from take

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Pad to a multiple of :data:`STRIDE` (the edge repeated), run the model, crop the padding off."""
        h, w = x.shape[-2:]
        pad_h, pad_w = (-h) % STRIDE, (-w) % STRIDE
        x = self.normalize(x)
        if pad_h or pad_w:
            x = F.pad(x, (0, pad_w, 0, pad_h), mode="replicate")
        return self.model(x)[..., :h, :w]


def build_smp_segmenter(architecture: Mapping) -> SmpSegmenter:
    """``smp/<arch>/<encoder>`` as an untrained :class:`SmpSegmenter`.

    Raises:
        UsageError: the name is not ``smp/<arch>/<encoder>``, smp is not installed, or smp refuses the pair.
    """
    name = str(architecture["backbone"])
    parts = name.split("/")
    if len(parts) != 3 or not all(parts):
        raise UsageError(f"model.backbone {name!r}: expected smp/<arch>/<encoder>, e.g. smp/unet/resnet18")
    try:
        import segmentation_models_pytorch as smp
    except ImportError:
        raise UsageError(
            f"model.backbone {name!r} needs segmentation-models-pytorch: pip install -e '.[smp]'"
        ) from None
    channels, classes = int(architecture["in_channels"]), int(architecture["num_classes"])
    try:
        model = smp.create_model(
            parts[1], encoder_name=parts[2], encoder_weights=None, in_channels=channels, classes=classes
        )
    except (KeyError, ValueError) as err:
        raise UsageError(f"model.backbone {name!r}: smp refuses it: {err}") from None
    return SmpSegmenter(model, [0.5] * channels, [0.25] * channels)
