"""The training data a study splits into folds, read from the configured data module, and each fold's split file.

* An image folder (every layout, and a labels CSV): its train and val splits together, from the image cache,
  with each file's path, target (a class, a label set, numbers), SHA-256 and pHash. A fold's split is a labels CSV
  in the study folder, written as its targets' kind writes one (``path,label,split``; ``path,labels,split`` with
  ``;``-joined label sets; ``path,<target>...,split``), which the fold's run reads through ``data.labels``; its
  test split is left out.
* The digits: their train and val splits, by index into ``load_digits()``; copies by SHA-256 of the pixels only
  (at 8x8 px, 10 pHash bits join thousands of distinct glyphs). A fold's split is ``data.split_file``.

A given test split is never in a fold; ``--refit`` trains on the whole pool and evaluates it.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from litstarter._engine.atomic_io import atomic_write
from litstarter._engine.targets import TargetKind, target_kind
from litstarter.data.digits import DigitsDataModule
from litstarter.data.image_folder import ImageFolderDataModule
from litstarter.errors import UsageError


@dataclass
class Pool:
    """The items a study folds, and the test split it keeps apart.

    Args:
        ids: Each item's name: its path under ``data.root`` (an image folder) or its index (the digits).
        targets: ``(n, ...)`` targets as their kind stores them: ``(n,)`` class indices, ``(n, K)`` 0/1 label sets,
            ``(n, K)`` values.
        kind: The targets' kind (:mod:`litstarter._engine.targets`): how they are stratified and written.
        class_names: The class names (labels, targets), in order.
        sha256: Each item's content hash.
        phash: Each item's pHash (16 hex digits, ``""`` for a flat image), or ``None``: copies by content only.
        test_ids: The test split's names (empty without one).
        test_targets: The test split's targets.
        id_column: ``path`` or ``index``: the column naming the items in the split files and predictions.
        data_key: The data argument a split file goes to (``labels`` or ``split_file``).
        pinned: Data arguments resolved from the whole pool (``image_size: auto``, ``channels: auto``), given to
            every fold so that they all train at the same size.
    """

    ids: list[str]
    targets: np.ndarray
    kind: TargetKind
    class_names: list[str]
    sha256: list[str]
    phash: list[str] | None
    test_ids: list[str]
    test_targets: np.ndarray
    id_column: str
    data_key: str
    pinned: dict[str, Any]

    def digest(self) -> str:
        """A hash of the items, their targets and contents: a study resumes only over the same data."""
        labels = [self.kind.text(y, self.class_names) for y in self.targets]
        text = "\n".join(f"{i}\t{y}\t{s}" for i, y, s in zip(self.ids, labels, self.sha256, strict=True))
        return hashlib.sha256(f"{text}\n{self.test_ids}".encode()).hexdigest()

    def write_split(self, path: Path, splits: list[str], with_test: str | None = None) -> Path:
        """Write ``path``: every item with its split (``train``/``val``, or ``None`` to leave it out), and the
        test items as ``with_test`` when given. Atomic, so a killed study never leaves half a file."""
        rows = [(i, y, s) for i, y, s in zip(self.ids, self.targets, splits, strict=True) if s]
        if with_test:
            rows += [(i, y, with_test) for i, y in zip(self.test_ids, self.test_targets, strict=True)]
        names = self.class_names

        def write(tmp: Path) -> None:
            with open(tmp, "w", newline="") as handle:
                out = csv.writer(handle)
                if self.id_column == "path":
                    out.writerow(["path", *self.kind.column(names), "split"])
                    out.writerows((i, *self.kind.cells(y, names), s) for i, y, s in rows)
                else:
                    out.writerow(["index", "split"])
                    out.writerows((i, s) for i, _, s in rows)

        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write(path, write)

    def data_args(self, split_file: Path) -> list[str]:
        """The fit arguments that make a run read ``split_file`` (and the pinned values)."""
        args = [f"--data.init_args.{self.data_key}={split_file.resolve()}"]
        return args + [f"--data.init_args.{key}={value}" for key, value in self.pinned.items()]


def data_module(config: dict[str, Any]):
    """The resolved config's data module, built as a fit builds it (nothing is trained)."""
    import lightning as L
    from jsonargparse import ArgumentParser

    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--data", type=L.LightningDataModule)
    return parser.instantiate_classes(parser.parse_object({"data": config.get("data")})).data


def read_pool(config: dict[str, Any]) -> Pool:
    """The training pool of the resolved config's data.

    Raises:
        UsageError: a data module other than the image folder and the digits.
    """
    data = data_module(config)
    if isinstance(data, ImageFolderDataModule):
        return _image_folder_pool(data, (config["data"].get("init_args") or {}))
    if isinstance(data, DigitsDataModule):
        return _digits_pool(data)
    raise UsageError(
        f"cv splits ImageFolderDataModule and DigitsDataModule data; data.class_path is {type(data).__name__}"
    )


def _image_folder_pool(data: ImageFolderDataModule, given: dict[str, Any]) -> Pool:
    kind = data.folder.kind
    if kind.decoded:  # masks and boxes: no labels CSV cell holds them
        raise UsageError(
            f"cv writes each fold as a labels CSV, one cell per image; {data.root} holds {kind.name} targets, which"
            " no cell holds: not yet (fit's own val split, or --data.val_fraction, scores them)"
        )
    cache = data.folder.load_or_build()
    pool_splits = [s for s in cache.splits if s != "test"]

    def column(field: str, splits: list[str]) -> list:
        return [v for split in splits for v in cache.column(split, field)]

    pinned = {}
    if given.get("image_size") == "auto":
        pinned["image_size"] = list(data.image_size)
    if given.get("channels") == "auto":
        pinned["channels"] = data.channels
    test = ["test"] if "test" in cache.splits else []
    return Pool(
        ids=column("path", pool_splits),
        targets=np.concatenate([cache.targets(s) for s in pool_splits]),  # class indices, label sets, values
        kind=kind,
        class_names=list(data.class_names),
        sha256=column("sha256", pool_splits),
        phash=column("phash", pool_splits),
        test_ids=column("path", test),
        test_targets=np.concatenate([cache.targets(s) for s in test]) if test else np.zeros(0, np.int64),
        id_column="path",
        data_key="labels",
        pinned=pinned,
    )


def _digits_pool(data: DigitsDataModule) -> Pool:
    from sklearn.datasets import load_digits

    from litstarter._engine.images.classes import relabel

    digits = load_digits()
    images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)  # as DigitsDataModule stores them
    kept: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for split, index in data.split_indices().items():
        keep, labels = relabel(digits.target[index], data.all_class_names, data.class_names)
        kept[split] = (index[keep], labels)
    ids = np.concatenate([kept["train"][0], kept["val"][0]])
    test_ids, test_labels = kept.get("test", (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    return Pool(
        ids=[str(i) for i in ids],
        targets=np.concatenate([kept["train"][1], kept["val"][1]]),
        kind=target_kind("class"),
        class_names=list(data.class_names),
        sha256=[hashlib.sha256(images[i].tobytes()).hexdigest() for i in ids],
        phash=None,
        test_ids=[str(i) for i in test_ids],
        test_targets=test_labels,
        id_column="index",
        data_key="split_file",
        pinned={},
    )
