"""The tasks: one LightningModule per task over the shared :class:`ImageTask`, each picked by its config
(``configs/task/<name>.yaml``), and each task's answers (``<name>_answers.py``: torch-free, for ``infer`` and
``serve``).

The names below are imported on first use (PEP 562), not when this package is: reading a task's answers must never
load torch, and ``infer``/``serve`` on an ONNX model import :mod:`litstarter.tasks.answers` alone.
"""

from __future__ import annotations

import importlib

__all__ = [
    "ImageClassifier",
    "ImageRegressor",
    "ImageTask",
    "MultilabelClassifier",
    "ObjectDetector",
    "SemanticSegmenter",
    "TaskAnswers",
    "answers_class",
    "task_names",
]

#: The module of this package that defines each public name.
_HOMES = {
    "ImageTask": "base",
    "ImageClassifier": "classification",
    "MultilabelClassifier": "multilabel",
    "ImageRegressor": "regression",
    "SemanticSegmenter": "segmentation",
    "ObjectDetector": "detection",
    "TaskAnswers": "answers",
    "answers_class": "answers",
    "task_names": "answers",
}


def __getattr__(name: str):
    """A public name, from its module (imported on first use: PEP 562). Not kept here, so that what this package
    holds does not depend on what was asked of it before (the config schema lists a package's own classes)."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__package__}.{_HOMES[name]}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
