"""The input/output contract of an exported model, written as ``model.json`` beside every export.

Torch-free (numpy + Pillow, the preprocessing of the image cache): a client on a box without torch, or in another
language, needs only an artifact and this JSON to classify an image exactly as training saw it:

1. decode the file, apply its EXIF orientation, convert to ``color_mode`` (``L`` or ``RGB``; transparency
   composited onto white);
2. resize (PIL's antialiased bilinear or bicubic, aspect kept, sizes rounded half to even, width pass first) so it
   covers ``resize_size``, then centre-crop ``resize_size``: the size the training data was stored at;
3. centre-crop ``image_size`` (the eval view of training);
4. feed ``(N, C, H, W)`` ``uint8`` values 0..255 as input ``input``; normalisation by ``mean``/``std`` happens
   inside the graph;
5. read ``logits`` ``(N, num_classes)``; softmax gives probabilities in ``class_names`` order.
   A multi-label model (``task: multilabel``) has one sigmoid per label instead: ``label`` is predicted when its
   sigmoid is at or above its entry in ``thresholds`` (tuned on validation). A regression model
   (``task: regression``) outputs standardised values: ``value = output * target_std + target_mean`` per target
   (``class_names`` name the targets). ``task`` absent: single-label.

``preprocessing`` states each rule exactly (:mod:`.preprocessing`): its ``resize`` and ``crop`` objects are
where an ``interpolation`` or a ``crop_pct`` other than the default goes.

A model trained on tiles (``data.tiles``) has ``tiling`` (:mod:`litstarter._engine.tiles`): its graph is one window
(``image_size``); a client keeps each image at its own size (resized down past ``tiling.max_side`` only), cuts it into
windows by ``tiling.windows``, runs them, and gathers their outputs by ``tiling.rule`` (``blend``: segmentation's
logits, ``boxes``: detection's merge across the seams).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from litstarter._engine.images.preprocess import as_size, center_crop_array, load_image
from litstarter._engine.tiles import Tiling
from litstarter.errors import BadInputError
from litstarter.extras.deploy.preprocessing import INTERPOLATIONS, preprocessing_fields
from litstarter.extras.deploy.tiling import check_tiling, load_own_size, tiling_numbers
from litstarter.tasks.answers import TaskAnswers, answers_class

if TYPE_CHECKING:
    from PIL import Image

#: The sidecar file name, beside the artifacts in an export folder.
SIDECAR_NAME = "model.json"
#: Key under which ONNX ``metadata_props`` (and TorchScript / pt2 extra files) embed the same JSON.
EMBEDDED_KEY = "litstarter.extras.deploy.contract"
FORMAT = "litstarter-model-contract"
VERSION = 1


class ContractError(BadInputError, ValueError):
    """A missing or malformed contract; the message names the file and the key."""


@dataclass(frozen=True)
class ModelContract:
    """What a model takes and returns.

    Args:
        class_names: Class names in logit order.
        channels: Image channels: 1 (grayscale) or 3 (RGB).
        image_size: ``(height, width)`` the model takes.
        resize_size: ``(height, width)`` files are resized and centre-cropped to before the final centre crop to
            ``image_size``: the size the data module stored training images at (for the 8x8 digits it equals
            ``image_size``; for an image folder it is the larger cache size).
        mean: Per-channel mean on the 0..1 scale, applied inside the graph.
        std: Per-channel std on the 0..1 scale, applied inside the graph.
        architecture: The network's shape (``backbone``, ``backbone_kwargs``, ``num_classes``, ``in_channels``,
            ``dropout``), so that ``weights.pt`` can be loaded into a rebuilt model, and ``image_size``, the size
            it was trained at (checked against ``preprocessing.image_size`` when a model is opened).
        input_name: Name of the graph input.
        output_name: Name of the graph output.
        interpolation: The resize filter (``preprocessing.resize.interpolation``): ``bilinear`` or ``bicubic``.
        task: The task whose answers read the outputs (``litstarter.tasks.answers``): ``single_label`` (a softmax
            over the logits), ``multilabel`` (a sigmoid per logit, and ``thresholds``), ``regression`` (values).
        task_state: What the task's answers need beyond the names (multi-label: ``thresholds``; regression:
            ``target_mean``, ``target_std``), one value per class name, written at ``model.json``'s top level.
        tiling: ``{"size", "overlap", "max_side"}`` of a model trained on tiles (``model.json``'s ``tiling``): each
            image is predicted at its own size by sliding windows of ``image_size``; ``None``: one view per image.
    """

    class_names: list[str]
    channels: int
    image_size: tuple[int, int]
    resize_size: tuple[int, int]
    mean: list[float]
    std: list[float]
    architecture: dict = field(default_factory=dict)
    input_name: str = "input"
    output_name: str = "logits"
    interpolation: str = "bilinear"
    task: str = "single_label"
    task_state: Mapping = field(default_factory=dict)
    tiling: Mapping | None = None

    def __post_init__(self) -> None:
        if self.interpolation not in INTERPOLATIONS:
            raise ContractError(
                f"preprocessing.resize.interpolation is {self.interpolation!r}; this litstarter resizes with"
                f" {', '.join(INTERPOLATIONS)} only, so it cannot reproduce this model's preprocessing"
            )
        if self.channels not in (1, 3):
            raise ContractError(f"channels must be 1 or 3, got {self.channels}")
        if len(self.mean) != self.channels or len(self.std) != self.channels:
            raise ContractError(f"mean/std need {self.channels} values each, got {self.mean} / {self.std}")
        try:
            problem = self.answers().problem()
        except KeyError as err:
            raise ContractError(err.args[0]) from None
        if problem:
            raise ContractError(problem)
        rh, rw = self.resize_size
        h, w = self.image_size
        if rh < h or rw < w:
            raise ContractError(
                f"resize_size {list(self.resize_size)} is smaller than image_size {list(self.image_size)}"
            )
        try:
            check_tiling(self)
        except ValueError as err:
            raise ContractError(str(err)) from None

    @property
    def tiles(self) -> Tiling | None:
        """The tiling (:class:`~litstarter._engine.tiles.Tiling`), or ``None`` for a model of one view per image."""
        return Tiling.from_value(self.tiling, "tiling")

    def answers(self) -> TaskAnswers:
        """The task's answers (:mod:`litstarter.tasks.answers`): what the outputs mean to ``infer`` and ``serve``."""
        return answers_class(self.task)(self.class_names, self.task_state)

    @property
    def thresholds(self) -> list[float] | None:
        """A multi-label model's threshold per label (its task state's), else ``None``."""
        return self.task_state.get("thresholds")

    @property
    def num_classes(self) -> int:
        """Number of classes (logits)."""
        return len(self.class_names)

    @property
    def color_mode(self) -> str:
        """The Pillow mode images are converted to: ``L`` or ``RGB``."""
        return "L" if self.channels == 1 else "RGB"

    def load_image(self, path: str | os.PathLike | BinaryIO | Image.Image, max_pixels: int | None = None) -> np.ndarray:
        """Decode one file into the model's input: ``(C, H, W)`` uint8, exactly the eval view of training.

        Args:
            path: The image file, a binary file object holding its bytes, or an image opened from one.
            max_pixels: Refuse larger images (``ImageTooLarge``) before decoding them.

        Raises:
            OSError / ValueError: If the file cannot be decoded.
        """
        if self.tiling is not None:  # at its own size (up to max_side): the windows cover it
            return load_own_size(self, path, max_pixels)
        image = load_image(path, self.channels, self.resize_size, max_pixels, self.interpolation)
        return center_crop_array(image, self.image_size)

    def view(self, image: np.ndarray) -> dict:
        """What the task's answers map an output back to a file by (``TaskAnswers.source_answer``): the sizes the file
        was resized and cropped to; for a tiling model, the input ``image``'s own (``(C, h, w)``)."""
        if self.tiling is not None:
            return {"resize_size": tuple(image.shape[-2:]), "image_size": tuple(image.shape[-2:])}
        return {"resize_size": self.resize_size, "image_size": self.image_size}

    def to_dict(self) -> dict:
        """The JSON-ready form written to ``model.json``."""
        data = {
            "format": FORMAT,
            "version": VERSION,
            "class_names": list(self.class_names),
            "num_classes": self.num_classes,
            "input": {
                "name": self.input_name,
                "dtype": "uint8",
                "layout": "NCHW",
                "shape": ["batch", self.channels, *self.image_size],
                "value_range": [0, 255],
            },
            "preprocessing": preprocessing_fields(
                self.color_mode,
                self.resize_size,
                self.image_size,
                self.interpolation,
                None if self.tiling is None else self.tiles.max_side,
            ),
            "normalization": {
                "mean": list(self.mean),
                "std": list(self.std),
                "scale": "0..1; the graph computes (x - 255 * mean) / (255 * std)",
                "applied_in_graph": True,
            },
            "output": {
                "name": self.output_name,
                "shape": ["batch", *self.answers().logits_shape(self.image_size)],
                "kind": self.answers().output_kind,
            },
            "architecture": dict(self.architecture),
        }
        answers = self.answers()
        if self.tiling is not None:
            data["tiling"] = self.tiles.contract(answers.tile_rule, self.task_state.get("nms_iou"))
        return {**data, **answers.contract_fields()}  # single-label contracts add nothing

    def to_json(self) -> str:
        """:meth:`to_dict` as compact JSON (what artifacts embed)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping, source: str = "contract") -> ModelContract:
        """Parse :meth:`to_dict`'s form (extra keys such as ``artifacts`` are ignored).

        Raises:
            ContractError: Starting with ``source``, naming the missing or bad key or value.
        """
        if data.get("format") != FORMAT:
            raise ContractError(f"{source}: 'format' is {data.get('format')!r}, expected {FORMAT!r}")
        if data.get("version") != VERSION:
            raise ContractError(f"{source}: 'version' is {data.get('version')!r}; this litstarter reads {VERSION}")
        try:
            contract = cls(
                class_names=[str(n) for n in data["class_names"]],
                channels=int(data["input"]["shape"][1]),
                image_size=as_size(data["preprocessing"]["image_size"]),
                resize_size=as_size(data["preprocessing"]["resize_size"]),
                mean=[float(v) for v in data["normalization"]["mean"]],
                std=[float(v) for v in data["normalization"]["std"]],
                architecture=dict(data.get("architecture") or {}),
                input_name=str(data["input"]["name"]),
                output_name=str(data["output"]["name"]),
                interpolation=_interpolation(data["preprocessing"]),
                task=str(data.get("task", "single_label")),
                task_state=_task_state(str(data.get("task", "single_label")), data),
                tiling=tiling_numbers(data.get("tiling")),
            )
            _check_sizes(data["preprocessing"])
            return contract
        except (KeyError, IndexError, TypeError) as err:
            raise ContractError(f"{source}: missing or malformed key {err}") from None
        except ValueError as err:  # a bad value: ContractError from __post_init__, or a bad size or number
            raise ContractError(f"{source}: {err}") from None

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "contract") -> ModelContract:
        """Parse JSON text; errors name ``source``."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ContractError(f"{source} is not valid JSON: {err}") from None
        if not isinstance(data, dict):
            raise ContractError(f"{source}: expected a JSON object, got {type(data).__name__}")
        return cls.from_dict(data, source)

    @classmethod
    def from_hparams(
        cls,
        hparams: Mapping,
        mean: Sequence[float],
        std: Sequence[float],
        resize_size: Sequence[int] | None = None,
        architecture: Mapping | None = None,
    ) -> ModelContract:
        """The contract of a checkpoint, from its task's hyper-parameters and its network's normalisation buffers.

        Args:
            hparams: The checkpoint's ``hyper_parameters``.
            mean: Per-channel mean on the 0..1 scale (the network's buffer / 255).
            std: Per-channel std on the 0..1 scale.
            resize_size: Overrides ``hparams["resize_size"]`` (e.g. the size the data module really stores).
            architecture: What rebuilds the network (``litstarter.models.network.architecture_of(hparams)``);
                without it ``weights.pt`` cannot be loaded from this contract.

        Raises:
            ContractError: If the size images were stored at is unknown (a checkpoint from before
                ``resize_size`` was recorded, and no ``resize_size`` given). ``resize_size: null`` means image_size.
        """
        image_size = as_size(hparams["image_size"])
        stored = resize_size if resize_size is not None else recorded_resize_size(hparams)
        if stored is None:  # a task's resize_size=None: stored as is, at image_size
            stored = image_size
        if stored == "unrecorded":
            raise ContractError(
                "the checkpoint does not record model.resize_size (the size training images were stored at), so "
                "the preprocessing cannot be reproduced; export it with `litstarter export`, which reads the size "
                "from the data module, and run on the export"
            )
        num_classes = int(hparams["num_classes"])
        names = hparams.get("class_names") or [str(i) for i in range(num_classes)]
        task = str(hparams.get("task") or "single_label")
        try:
            state = answers_class(task).state_from(hparams, num_classes)
        except KeyError as err:
            raise ContractError(err.args[0]) from None
        return cls(
            class_names=[str(n) for n in names],
            channels=int(hparams["in_channels"]),
            image_size=image_size,
            resize_size=as_size(stored),
            mean=[float(v) for v in mean],
            std=[float(v) for v in std],
            # The size it was trained at travels with the architecture: an edited image_size is then caught.
            architecture={**architecture, "image_size": list(image_size)} if architecture else {},
            interpolation=str(hparams.get("interpolation") or "bilinear"),  # absent in checkpoints before it
            task=task,
            task_state=state,
            tiling=hparams.get("tiles"),
        )


def _task_state(task: str, data: Mapping) -> dict:
    """The task's state keys of a ``model.json`` (an unknown task is refused by the contract, naming it)."""
    try:
        return answers_class(task).state_of(data)
    except KeyError:
        return {}


def _check_sizes(preprocessing: Mapping) -> None:
    """``resize.size`` and ``crop.size``, where present, must be ``resize_size`` and ``image_size``: a client reading
    either resizes as ``infer`` does."""
    for key, same in (("resize", "resize_size"), ("crop", "image_size")):
        section = preprocessing.get(key)
        if isinstance(section, Mapping) and "size" in section and list(section["size"]) != list(preprocessing[same]):
            raise ValueError(
                f"preprocessing.{key}.size is {section['size']} but preprocessing.{same} is {preprocessing[same]}"
            )


def _interpolation(preprocessing: Mapping) -> str:
    """``resize.interpolation``, or the first layout's ``resample`` (``bilinear`` when neither is there)."""
    resize = preprocessing.get("resize")
    if isinstance(resize, Mapping) and "interpolation" in resize:
        return str(resize["interpolation"])
    return str(preprocessing.get("resample", "bilinear"))


def recorded_resize_size(hparams: Mapping) -> tuple[int, int] | None | str:
    """``model.resize_size`` of a checkpoint's hyper-parameters; ``"unrecorded"`` if it has none."""
    return hparams.get("resize_size", "unrecorded")


def read_sidecar(model_path: str | os.PathLike) -> ModelContract | None:
    """The ``model.json`` beside ``model_path``, or ``None`` if there is none."""
    sidecar = Path(model_path).parent / SIDECAR_NAME
    if not sidecar.is_file():
        return None
    return ModelContract.from_json(sidecar.read_text(), source=str(sidecar))
