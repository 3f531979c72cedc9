"""A network run over images larger than its input by sliding windows, on torch tensors: the task's val, test and
predict (``ImageTask.forward`` with ``model.tiles``). The windows, the blend and the merge are
:mod:`litstarter._engine.tiles`'s, the same code ``infer`` and ``serve`` run in NumPy; this module only gives it
torch's arrays.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from litstarter._engine import tiles
from litstarter._engine.tiles import Tiling
from litstarter.errors import UsageError

#: Windows per forward pass of the network.
WINDOWS_PER_PASS = 16


class TorchOps(tiles.ArrayOps):
    """:class:`~litstarter._engine.tiles.ArrayOps` on torch tensors, on the device of the tensor they are given."""

    def zeros(self, like: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.zeros(shape, dtype=torch.float32, device=like.device)

    def constant(self, like: torch.Tensor, array: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(array, dtype=torch.float32, device=like.device)

    def floating(self, array: torch.Tensor) -> torch.Tensor:
        return array.float()

    def stack(self, arrays: list) -> torch.Tensor:
        return torch.stack(arrays)

    def pad(self, image: torch.Tensor, height: int, width: int) -> torch.Tensor:
        return F.pad(image, (0, width - image.shape[-1], 0, height - image.shape[-2]))

    def numpy(self, array: torch.Tensor) -> np.ndarray:
        return array.detach().float().cpu().numpy()


TORCH = TorchOps()


def task_tiling(value, task_name: str) -> tuple[Tiling | None, str]:
    """A task's ``model.tiles`` and the rule its answers gather windows by (``TaskAnswers.tile_rule``).

    Raises:
        UsageError: a tiling out of range, or one for a task whose answers do not tile (one line).
    """
    tiling = Tiling.from_value(value, "model.tiles")
    if tiling is None:
        return None, ""
    from litstarter.tasks.answers import answers_class  # NumPy only

    try:
        rule = answers_class(task_name).tile_rule
    except KeyError:
        rule = ""
    if not rule:
        raise UsageError(
            f"model.tiles (data.tiles) slides windows for segmentation and detection; task {task_name or '(unnamed)'!r}"
            " does not tile: drop data.tiles"
        )
    return tiling, rule


def needs_windows(images: torch.Tensor, tiling: Tiling | None) -> bool:
    """Whether ``(B, C, H, W)`` images are not one window of ``tiling`` (larger, or smaller, than its size)."""
    return tiling is not None and tuple(images.shape[-2:]) != tuple(tiling.size)


def run_tiled(
    run: Callable[[torch.Tensor], torch.Tensor],
    images: torch.Tensor,
    tiling: Tiling,
    rule: str,
    nms_iou: float = 0.5,
    batch: int = WINDOWS_PER_PASS,
) -> torch.Tensor:
    """``run`` over each of ``(B, C, H, W)`` images by sliding windows: ``(B, K, H, W)`` blended logits (``rule``
    ``blend``), or ``(B, D, 6)`` merged detections (``boxes``: ``x1, y1, x2, y2, score, class``, best first, padded
    with rows of class -1 to the most any image has)."""
    found = [tiles.predict(image, tiling, rule, run, batch, nms_iou, TORCH) for image in images]
    if rule == "blend":
        return torch.stack(found)
    rows = max([len(f) for f in found] + [1])
    out = torch.zeros((len(found), rows, 6), dtype=torch.float32)
    out[:, :, 5] = -1
    for table, boxes in zip(out, found, strict=True):
        table[: len(boxes)] = torch.from_numpy(boxes)
    return out.to(images.device)
