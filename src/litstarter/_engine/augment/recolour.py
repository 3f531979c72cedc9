"""Batched recolouring for the fast augmentation: inverting images and swapping their colour channels.

Both teach a network that a shape is the same class in any colours: light on dark as dark on light, red ink as
blue. Each sample's choice comes from its own uniforms (:func:`~litstarter._engine.augment.fast.uniforms`), so
the result does not depend on the batch it arrives in.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

#: The six orders of three colour channels; index 0 is the identity.
CHANNEL_ORDERS = torch.tensor(list(itertools.permutations(range(3))))


def recolour(images: torch.Tensor, draws: np.ndarray, invert: float, channel_shuffle: float) -> torch.Tensor:
    """Invert (``255 - x``) and/or reorder the channels of some images of a ``(B, C, H, W)`` uint8 batch.

    Args:
        images: ``(B, C, H, W)`` uint8; channels are reordered only when C is 3.
        draws: ``(B, 3)`` uniforms in ``[0, 1)`` per sample: invert or not, shuffle or not, which order.
        invert: Probability of inverting an image.
        channel_shuffle: Probability of reordering an RGB image's channels (one of the five other orders).

    Returns:
        The batch, recoloured (a new tensor where anything changed).
    """
    draws = torch.from_numpy(draws)
    if invert > 0:
        flip = draws[:, 0] < invert
        if flip.any():
            images = torch.where(flip.view(-1, 1, 1, 1), 255 - images, images)
    if channel_shuffle > 0 and images.shape[1] == 3:
        shuffled = draws[:, 1] < channel_shuffle
        if shuffled.any():
            order = CHANNEL_ORDERS[1 + (draws[:, 2] * 5).long().clamp_(max=4)]  # (B, 3), never the identity
            order[~shuffled] = CHANNEL_ORDERS[0]
            index = order.view(-1, 3, 1, 1).expand_as(images)
            images = images.gather(1, index)
    return images
