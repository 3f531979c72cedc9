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
    """The answers of a task whose network returns one score per class, ``(B, K)`` (its logits).

    Args:
        class_names: The output names, in order.
        thresholds: A per-class decision threshold, for tasks that have them (``None`` otherwise).
    """

    #: The task's name (the one its LightningModule saves in checkpoints, and ``model.json``'s ``task``).
    name: ClassVar[str] = ""
    #: ``model.json``'s ``output.kind``: how to read the graph's output.
    output_kind: ClassVar[str] = "logits"
    #: The export report's name for :meth:`agreement` (an exported fp32 artifact must agree on every image).
    agreement_name: ClassVar[str] = "agreement"
    #: The export report's name for :meth:`score` (INT8 is accepted on its drop against eager).
    score_name: ClassVar[str] = "score"

    def __init__(self, class_names: Sequence[str], thresholds: Sequence[float] | None = None) -> None:
        self.class_names = list(class_names)
        self.thresholds = None if thresholds is None else [float(t) for t in thresholds]

    def problem(self) -> str | None:
        """Why these answers cannot be given (a phrase for the contract's error), or ``None``."""
        return None

    @classmethod
    def thresholds_from(cls, hparams: Mapping, num_classes: int) -> list[float] | None:
        """The thresholds a checkpoint's ``hparams`` carry for this task (``None``: the task has none)."""
        return None

    def contract_fields(self) -> dict:
        """What the task adds to ``model.json`` (nothing: a contract without ``task`` is single-label)."""
        return {}

    def probabilities(self, logits: np.ndarray) -> np.ndarray:
        """``(B, K)`` logits -> ``(B, K)`` float64 probabilities."""
        raise NotImplementedError

    def answer(self, p: np.ndarray, k: int) -> tuple[list[tuple[str, float]], list[str] | None]:
        """One image's ``(name, probability)`` pairs from its ``(K,)`` probabilities (``k``: how many to keep),
        and the names predicted, where the task predicts a set (``None`` otherwise)."""
        raise NotImplementedError

    def json_answer(self, p: np.ndarray, k: int) -> dict:
        """``serve``'s ``/predict`` answer for one image's ``(K,)`` probabilities."""
        raise NotImplementedError

    def agreement(self, outputs: np.ndarray, reference: np.ndarray) -> float:
        """The share of images whose answer from ``outputs`` logits is the one from ``reference`` logits."""
        raise NotImplementedError

    def score(self, logits: np.ndarray, targets: np.ndarray) -> float:
        """The task's headline figure of ``logits`` against the data's ``targets`` (higher is better)."""
        raise NotImplementedError

    def csv_label_names(self) -> list[str] | None:
        """``infer``'s CSV gets a probability column per name here (``None``: top-k columns instead)."""
        return None


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
