"""A task's answers: what ``model.json``, ``infer`` and ``serve`` make of the network's outputs, with NumPy only.

Each task has a ``<name>_answers.py`` beside its LightningModule, defining ``ANSWERS``, a :class:`TaskAnswers`
subclass named like the task (``single_label``, ``multilabel``). Downstream code asks the task's answers instead of
testing its name; a task named in a ``model.json`` or a checkpoint is looked up among this package's own answer
modules (:func:`answers_class`), never imported from a module the file names. Nothing here imports torch, so
``infer`` and ``serve`` on an ONNX model stay torch-free.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np


class TaskAnswers:
    """The answers of a task whose network returns one row of numbers per image, ``(B, K)`` (its logits).

    Args:
        class_names: The output names, in order (classes, labels, or a regression's targets).
        state: What the task's answers need beyond the names, as plain numbers (multi-label: ``thresholds``;
            regression: ``target_mean`` and ``target_std``): saved in checkpoints (``checkpoint["answers"]``) and
            written to ``model.json`` under the same keys (:attr:`state_keys`).
    """

    #: The task's name (the one its LightningModule saves in checkpoints, and ``model.json``'s ``task``).
    name: ClassVar[str] = ""
    #: ``model.json``'s ``output.kind``: how to read the graph's output.
    output_kind: ClassVar[str] = "logits"
    #: The name of :meth:`outputs`' tensor in the Open Inference Protocol (``serve``'s v2 route), and its datatype.
    output_name: ClassVar[str] = "probabilities"
    output_dtype: ClassVar[str] = "FP32"
    #: Whether the outputs rank classes (Triton's classification extension applies to them).
    ranks_classes: ClassVar[bool] = True
    #: The keys of :attr:`state` (``model.json`` holds them at its top level).
    state_keys: ClassVar[tuple[str, ...]] = ()
    #: The fewest outputs the task takes.
    min_outputs: ClassVar[int] = 2
    #: The export report's name for :meth:`agreement`, and the least an exported fp32 artifact must reach.
    agreement_name: ClassVar[str] = "agreement"
    agreement_required: ClassVar[float] = 1.0
    #: The export report's name for :meth:`score` (INT8 is accepted on its drop against eager).
    score_name: ClassVar[str] = "score"
    #: The task's own metric that :meth:`score` is (``val/<metric_name>``): cv's out-of-fold figure is keyed by it.
    metric_name: ClassVar[str] = "score"
    #: Before each name in the columns of :meth:`outputs` (cv's out-of-fold file).
    output_prefix: ClassVar[str] = "prob_"
    #: Whether an answer is on the source file's own pixels (a mask, boxes: :meth:`source_answer`), rather than
    #: on the model's input alone.
    on_source: ClassVar[bool] = False
    #: What each file's answer is, as a file of its own beside ``infer``'s CSV (``mask``: :meth:`file_bytes`);
    #: ``""``: none, the CSV rows are the answer.
    writes_files: ClassVar[str] = ""
    #: The suffix of one file of every answer that ``infer`` writes beside its CSV (``coco.json``:
    #: :meth:`results`); ``""``: none.
    results_file: ClassVar[str] = ""
    #: Whether an exported INT8 graph can be had and scored (:meth:`score`).
    int8: ClassVar[bool] = True
    #: How the outputs of windows gather into an image's when the model slides windows over large images
    #: (``data.tiles``; :mod:`litstarter._engine.tiles`): ``blend`` (maps of logits), ``boxes`` (detections merged
    #: across the seams); ``""``: the task does not tile.
    tile_rule: ClassVar[str] = ""

    def __init__(self, class_names: Sequence[str], state: Mapping | None = None) -> None:
        self.class_names = list(class_names)
        self.state = {key: value for key, value in (state or {}).items() if key in self.state_keys}

    def problem(self) -> str | None:
        """Why these answers cannot be given (a phrase for the contract's error), or ``None``."""
        if len(self.class_names) < self.min_outputs:
            return f"class_names needs at least {self.min_outputs} names for task {self.name}, got {self.class_names}"
        missing = [key for key in self.state_keys if key not in self.state]
        if missing:
            return f"task {self.name} needs {', '.join(missing)} (one value per class name)"
        wrong = [key for key in self.state_keys if len(self.state[key]) != len(self.class_names)]
        if wrong:
            return f"{', '.join(wrong)} need one value per class name for task {self.name}, got {self.state}"
        return None

    @classmethod
    def state_from(cls, hparams: Mapping, num_classes: int) -> dict:
        """The state a checkpoint carries for these answers, put in ``hparams["answers"]`` by the checkpoint reader."""
        return dict(hparams.get("answers") or {})

    @classmethod
    def state_of(cls, data: Mapping) -> dict:
        """The state written in a ``model.json`` (its :attr:`state_keys`, as floats)."""
        return {key: [float(v) for v in data[key]] for key in cls.state_keys if data.get(key) is not None}

    def contract_fields(self) -> dict:
        """What the task adds to ``model.json``: ``task`` and its state (nothing: a contract without ``task`` is
        single-label)."""
        return {"task": self.name, **self.state}

    def logits_shape(self, image_size: Sequence[int]) -> list:
        """The graph's output per image (``model.json``'s ``output.shape`` after ``batch``): ``[K]``."""
        return [len(self.class_names)]

    def output_shape(self, image_size: Sequence[int]) -> list:
        """:meth:`outputs` per image (the v2 route's shape after the batch): ``[K]``."""
        return [len(self.class_names)]

    def outputs(self, logits: np.ndarray) -> np.ndarray:
        """``(B, K)`` logits -> the task's ``(B, K)`` float64 answers (probabilities, values)."""
        raise NotImplementedError

    def source_answer(self, p: np.ndarray, source, view: dict):
        """An :attr:`on_source` task's answer for one file (its path or bytes) from its outputs ``p``, on the file's
        own pixels; ``view`` holds the contract's ``resize_size`` and ``image_size`` (:func:`view_geometry`)."""
        raise NotImplementedError

    def file_bytes(self, answer) -> bytes:
        """A :attr:`writes_files` task's answer as the file ``infer`` writes (a PNG)."""
        raise NotImplementedError

    def csv_rows(self, answer, k: int) -> list[list[str]]:
        """``infer``'s CSV rows for one file's answer under :meth:`csv_columns`: one (:meth:`csv_cells`)."""
        return [self.csv_cells(answer, k)]

    def results(self, answers: list[tuple[str, object]]) -> bytes:
        """A :attr:`results_file` task's one file of every ``(file name, answer)``."""
        raise NotImplementedError

    def http_answer(self, answer, k: int, accept: str) -> tuple[object, str]:
        """``serve``'s ``/predict`` body for one answer and its media type: :meth:`json_answer` as JSON (a task may
        answer otherwise when the request's ``Accept`` names it)."""
        return self.json_answer(answer, k), "application/json"

    def output_tensors(self, logits: np.ndarray) -> dict[str, tuple[np.ndarray, str]]:
        """The v2 route's outputs besides the logits: ``{name: (array, datatype)}``: :meth:`outputs`."""
        return {self.output_name: (self.outputs(logits), self.output_dtype)}

    def output_specs(self, image_size: Sequence[int]) -> list[dict]:
        """The v2 metadata of :meth:`output_tensors`: ``[{"name", "datatype", "shape"}]`` (batch first, ``-1``)."""
        return [
            {"name": self.output_name, "datatype": self.output_dtype, "shape": [-1, *self.output_shape(image_size)]}
        ]

    def close(self, outputs: np.ndarray, reference: np.ndarray, rtol: float, atol: float) -> bool:
        """Whether an exported fp32 graph's ``outputs`` are within the tolerances of eager's ``reference``: every
        output within ``atol + rtol`` times the largest ``|output|`` of the same image (:func:`logit_bound`)."""
        return bool((np.abs(outputs - reference) <= logit_bound(reference, rtol, atol)).all())

    def answer(self, p: np.ndarray, k: int) -> tuple[list[tuple[str, float]], list[str] | None]:
        """One image's ``(name, output)`` pairs from its ``(K,)`` outputs (``k``: how many to keep), and the names
        predicted, where the task predicts a set (``None`` otherwise)."""
        raise NotImplementedError

    def json_answer(self, p: np.ndarray, k: int) -> dict:
        """``serve``'s ``/predict`` answer for one image's ``(K,)`` outputs."""
        raise NotImplementedError

    def csv_columns(self, k: int) -> list[str]:
        """``infer``'s CSV columns between ``file`` and ``error``: ``pred, prob``, then the top ``k``."""
        columns = ["pred", "prob"]
        for i in range(1, k + 1):
            columns += [f"top{i}", f"top{i}_prob"]
        return columns

    def csv_cells(self, p: np.ndarray, k: int) -> list[str]:
        """One image's cells under :meth:`csv_columns` (the best class, then the top ``k``)."""
        pairs, _ = self.answer(p, k)
        cells = [pairs[0][0], f"{pairs[0][1]:.6f}"]
        for name, value in pairs:
            cells += [name, f"{value:.6f}"]
        return cells

    def output_columns(self) -> list[str]:
        """A column name per output: ``prob_<class>``."""
        return [f"{self.output_prefix}{name}" for name in self.class_names]

    def predicted(self, p: np.ndarray) -> str:
        """One image's answer from its ``(K,)`` outputs, as a labels CSV would write its target (a class name)."""
        raise NotImplementedError

    def agreement(self, outputs: np.ndarray, reference: np.ndarray) -> float:
        """The share of images whose answer from ``outputs`` logits is the one from ``reference`` logits."""
        raise NotImplementedError

    def score(self, logits: np.ndarray, targets: np.ndarray) -> float:
        """The task's headline figure of ``logits`` against the data's ``targets`` (higher is better)."""
        return self.scored(self.outputs(logits), targets)

    def scored(self, outputs: np.ndarray, targets: np.ndarray) -> float:
        """:meth:`score` of the task's outputs (:meth:`outputs`) rather than of logits."""
        raise NotImplementedError


@functools.cache  # the package's files do not change while it runs; serve asks once a request
def _modules() -> dict[str, type[TaskAnswers]]:
    """This package's answer modules (``*_answers.py`` beside this file), by task name."""
    found = {}
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name.endswith("_answers"):
            answers = importlib.import_module(f"{__package__}.{info.name}").ANSWERS
            found[answers.name] = answers
    return found


def task_names() -> list[str]:
    """The tasks this package has answers for."""
    return sorted(_modules())


def answers_class(task: str) -> type[TaskAnswers]:
    """The answers of ``task`` (a name from a checkpoint or a ``model.json``), among this package's own.

    Raises:
        KeyError: ``task`` is none of them (the message lists them).
    """
    modules = _modules()
    if task not in modules:
        raise KeyError(f"task {task!r} is none of this litstarter's tasks ({', '.join(sorted(modules))})")
    return modules[task]


def view_geometry(size: tuple[int, int], resize_size: Sequence[int], image_size: Sequence[int]) -> tuple:
    """How a ``(W, H)`` file (as shown) maps onto the model's input: ``(scale_x, scale_y, left, top)``, a file pixel
    ``x`` being input pixel ``x * scale_x - left`` (the cover resize to ``resize_size``, aspect kept, sides rounded;
    its centre crop; the eval view's centre crop to ``image_size``)."""
    width, height = size
    rh, rw = resize_size
    h, w = image_size
    scale = max(rh / height, rw / width)
    new_w, new_h = max(rw, round(width * scale)), max(rh, round(height * scale))
    left, top = (new_w - rw) // 2 + (rw - w) // 2, (new_h - rh) // 2 + (rh - h) // 2
    return new_w / width, new_h / height, left, top


def source_size(source) -> tuple[int, int]:
    """A file's ``(width, height)`` as shown, after its EXIF orientation (from the header alone); ``source``: its
    path or its bytes."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source) as image:
        width, height = image.size
        if image.getexif().get(0x0112, 1) in (5, 6, 7, 8):  # a quarter turn swaps the sides
            width, height = height, width
    return width, height


def logit_bound(reference: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """How far an exported graph's logits may stray from eager's ``(B, ...)`` ``reference``: ``atol + rtol *`` the
    image's largest ``|logit|``, shaped to broadcast over the image's outputs.

    Scaled to the image's logits, not to each logit: a logit near zero is the sum of terms as large as the others,
    so its rounding error in float32 (another summation order, fused kernels) is as large as theirs."""
    scale = np.abs(reference).reshape(len(reference), -1).max(axis=1, initial=0.0)
    return (atol + rtol * scale).reshape(-1, *([1] * (reference.ndim - 1)))


def figure_label(name: str) -> str:
    """An export figure's name (:attr:`TaskAnswers.agreement_name`) as a sentence says it: ``top-1 agreement``."""
    return name.replace("top1", "top-1").replace("_", " ")


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float64 (stable for large logits)."""
    z = logits.astype(np.float64)
    z -= z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def sigmoid(logits: np.ndarray) -> np.ndarray:
    """Element-wise sigmoid in float64."""
    return 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
