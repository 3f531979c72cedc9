"""A model trained on tiles, as a client runs it (``infer`` and ``serve``, torch-free): each image at its own size,
cut into windows of the graph's input, their outputs gathered by the task's rule (:mod:`litstarter._engine.tiles`,
the same code the task's val/test/predict run). ``model.json``'s ``tiling`` records the numbers and the rules."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from litstarter._engine import tiles
from litstarter._engine.images.preprocess import load_image
from litstarter.errors import UsageError


class ModelContract(Protocol):
    """What these functions read of a model's contract (:class:`litstarter.extras.deploy.contract.ModelContract`,
    which calls them: named here by its shape, not imported)."""

    task: str
    tiling: Mapping | None
    image_size: Any
    channels: int
    interpolation: str
    task_state: dict

    @property
    def tiles(self) -> tiles.Tiling: ...

    def answers(self) -> Any: ...


def tiling_numbers(value) -> dict | None:
    """``model.json``'s ``tiling``: its numbers (the rest is their rules in words).

    Raises:
        ValueError: ``tiling`` is not an object.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"tiling must be an object of size, overlap and max_side, got {value!r}")
    return {key: value[key] for key in ("size", "overlap", "max_side") if key in value}


def check_tiling(contract: ModelContract) -> None:
    """A contract's tiling must be well-formed, of windows of its ``image_size``, for a task with a rule for them.

    Raises:
        ValueError: one line naming the key (the contract's parser names its source before it).
    """
    if contract.tiling is None:
        return
    try:
        tiling = tiles.Tiling.from_value(contract.tiling, "tiling")
    except UsageError as err:
        raise ValueError(str(err)) from None
    if list(tiling.size) != list(contract.image_size):
        raise ValueError(
            f"tiling.size is {list(tiling.size)} but preprocessing.image_size is {list(contract.image_size)}"
        )
    if not contract.answers().tile_rule:
        raise ValueError(f"tiling: task {contract.task} does not slide windows (segmentation and detection do)")


def load_own_size(contract: ModelContract, path, max_pixels: int | None) -> np.ndarray:
    """A tiling model's input: the file at its own size after its EXIF orientation (resized down so its longer side is
    ``tiling.max_side`` when over it): ``(C, h, w)`` uint8."""
    from PIL import Image

    image = path if isinstance(path, Image.Image) else Image.open(path)
    width, height = image.size
    if image.getexif().get(0x0112, 1) in (5, 6, 7, 8):  # a quarter turn swaps the sides
        width, height = height, width
    size = tiles.own_size(width, height, contract.tiles.max_side)
    return load_image(image, contract.channels, size, max_pixels, contract.interpolation)


def predict_image(contract: ModelContract, run: Callable[[np.ndarray], np.ndarray], image: np.ndarray, batch: int):
    """One ``(C, h, w)`` image through ``run`` (windows -> their outputs) by the contract's tiling: the task's outputs
    for it as one view would give them (``(1, K, h, w)`` logits, ``(1, m, 6)`` boxes)."""
    answers = contract.answers()
    nms_iou = float(contract.task_state.get("nms_iou", 0.5))
    return tiles.predict(image, contract.tiles, answers.tile_rule, run, batch, nms_iou)[None]


async def predict_image_async(contract: ModelContract, predict, image: np.ndarray):
    """:func:`predict_image` with an asynchronous ``predict`` (``serve``'s batcher: windows in, an output each out),
    all the image's windows submitted at once."""
    tiling, rule = contract.tiles, contract.answers().tile_rule
    height, width = image.shape[-2:]
    image = tiles.padded(image, tiling)
    where = tiles.positions(image.shape[-2], image.shape[-1], tiling)
    outputs = np.stack(await predict(tiles.windows(image, where, tiling)))
    gathered = tiles.assembler(height, width, tiling, rule, float(contract.task_state.get("nms_iou", 0.5)))
    gathered.add(outputs, where)
    return tiles.finished(gathered, height, width, rule)[None]
