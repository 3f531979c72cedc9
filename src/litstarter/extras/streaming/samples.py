"""What a data module's splits hold, as ``optimize`` writes them: its own arrays, targets and stable sample ids.

Nothing here lists, splits or decodes: the data module does that as ``fit`` would (the image folder through its
cache, so the shards hold the cache's resized uint8 images byte for byte), and this reads its splits back.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from litstarter._engine.images.classes import relabel
from litstarter._engine.images.shards import SHARDS_VERSION
from litstarter.data import ArrayDataModule, DigitsDataModule, ImageFolderDataModule
from litstarter.errors import UsageError

SPLITS = ("train", "val", "test")
#: What the cache records of each file by its change rules (its manifest's columns); ``--encoded`` checks them again
#: once the files are stored.
FILE_FACTS = ("size", "mtime_ns", "ctime_ns", "inode")


@dataclass
class Split:
    """One split as it goes into shards.

    Args:
        images: ``(N, C, H, W)`` uint8 (the cache's memory map, or an array in RAM).
        targets: ``(N, ...)``: class indices, label sets, values (the dataset's targets, as its kind stores them).
        ids: A stable id per sample: the file's path under ``data.root``, or ``load_digits/<index>``.
        order: The order to store the samples in (indices into the arrays); ``None``: their own order.
        root: ``--encoded``: the folder the ids are paths under; each sample then stores its file's bytes (the
            files ``prepare_data`` just checked against the cache by its change rules, so the bytes are those decoded).
        recorded: ``--encoded``: each file's :data:`FILE_FACTS` as the cache recorded them, in ``ids`` order.
    """

    images: np.ndarray
    targets: np.ndarray
    ids: list[str]
    order: np.ndarray | None = None
    root: str | None = None
    recorded: list[tuple[int, ...]] | None = None


def sample(index: int, split: Split) -> dict:
    """Sample ``index`` as LitData stores it: ``{"image", "target", "id", "index"}``; the image is the ``(C, H, W)``
    uint8 array, or with ``split.root`` (``--encoded``) the bytes of the file the cache decoded; the target an int
    (a class), its row of numbers (a label set, values) or its mask."""
    target = split.targets[index]  # a class index; a row of numbers (float32); a mask (uint8, the image's size)
    target = int(target) if np.ndim(target) == 0 else np.ascontiguousarray(target)
    return {"image": _image(index, split), "target": target, "id": split.ids[index], "index": index}


def _image(index: int, split: Split) -> np.ndarray | bytes:
    if split.root is None:
        return np.ascontiguousarray(split.images[index])
    try:
        return (Path(split.root) / split.ids[index]).read_bytes()
    except OSError:  # an error here would leave LitData's processes behind; convert.check_unchanged names the file
        return b""


def _ids(datamodule: ArrayDataModule, split: str, n: int) -> list[str]:
    if isinstance(datamodule, ImageFolderDataModule):
        return [str(path) for path in datamodule.load_cache().column(split, "path")]
    if isinstance(datamodule, DigitsDataModule):
        from sklearn.datasets import load_digits

        index = datamodule.split_indices()[split]
        keep, _ = relabel(load_digits().target[index], datamodule.all_class_names, datamodule.class_names)
        return [f"load_digits/{i}" for i in index[keep]]
    return [f"{split}/{i}" for i in range(n)]


def input_paths(datamodule) -> dict[str, Path]:
    """The local paths a data module reads, by the key that names them: an image folder's root, its labels file and
    its cache folder; the digits' split file; another module's ``root`` if it has one. (A labels file's folder is
    not one: a shards folder beside ``labels.csv`` is the usual layout, and only the file is read there.)"""
    if isinstance(datamodule, ImageFolderDataModule):
        folder = datamodule.folder
        found = {"data.root": folder.root, "data.cache_dir": folder.cache_dir}
        if folder.layout.labels is not None:
            found["data.labels"] = Path(folder.layout.labels)
        return found
    if isinstance(datamodule, DigitsDataModule):
        return {"data.split_file": Path(datamodule.split_file)} if datamodule.split_file else {}
    root = getattr(datamodule, "root", None)
    return {"data.root": Path(root)} if isinstance(root, (str, Path)) else {}


def check_convertible(datamodule) -> None:
    """Refuse, in one line, data that ``optimize`` cannot write: splits that are not arrays (shards already)."""
    if not isinstance(datamodule, ArrayDataModule):
        raise UsageError(
            f"litstarter optimize converts data modules with array splits (ImageFolderDataModule, DigitsDataModule);"
            f" data.class_path is {type(datamodule).__name__}"
        )


def read_splits(datamodule: ArrayDataModule, encoded: bool = False) -> dict[str, Split]:
    """Every non-empty split of a data module (after ``prepare_data`` and ``setup``); val and test in their own
    order, train in a permutation seeded by ``data.seed``; ``encoded``: each split names its files' folder. LitData
    shuffles chunk by chunk and draws a batch from one chunk, and the cache holds a split class by class: stored
    so, every batch would hold a few classes only."""
    check_convertible(datamodule)
    found = {}
    for split in SPLITS:
        dataset = getattr(datamodule, f"{split}_set", None)
        if dataset is not None and len(dataset):
            order = np.random.default_rng(datamodule.seed).permutation(len(dataset)) if split == "train" else None
            found[split] = Split(dataset.images, dataset.targets, _ids(datamodule, split, len(dataset)), order)
            if encoded:
                cache = datamodule.load_cache()
                found[split].root = str(datamodule.root)
                found[split].recorded = list(zip(*(cache.column(split, fact) for fact in FILE_FACTS), strict=True))
    return found


def check_encodable(datamodule) -> None:
    """Refuse ``--encoded`` in one line for data without files (the digits, other arrays)."""
    if not isinstance(datamodule, ImageFolderDataModule):
        raise UsageError(
            f"litstarter optimize --encoded stores image files, so it needs an image folder (or labels"
            f" CSV) data module; data.class_path is {type(datamodule).__name__}"
        )


def source_params(datamodule: ArrayDataModule, storage: str = "uint8") -> dict:
    """The preprocessing parameters that decide what the shards hold (recorded in ``shards.json``); ``storage``
    (``uint8`` or ``encoded``) only for an image folder, the one source with files to store."""
    kind = f"{type(datamodule).__module__}.{type(datamodule).__qualname__}"
    if isinstance(datamodule, ImageFolderDataModule):
        params = {"data": kind, **datamodule.folder.cache_params(), "interpolation": datamodule.interpolation}
        return params if storage == "uint8" else {**params, "storage": storage}
    if isinstance(datamodule, DigitsDataModule):
        keys = ("val_fraction", "test_fraction", "seed", "split_file")
        return {"data": kind, **{key: getattr(datamodule, key) for key in keys}}
    return {"data": kind}


def split_description(datamodule: ArrayDataModule, splits: dict[str, Split]) -> str:
    """Where each split came from, in the line a fit prints (the image folder's layout line)."""
    counts = {split: len(s.ids) for split, s in splits.items()}
    if isinstance(datamodule, ImageFolderDataModule):
        return datamodule.folder.listing().summary(counts)
    return f"data: {type(datamodule).__name__}; " + ", ".join(f"{s} {n}" for s, n in counts.items())


def fingerprint(datamodule: ArrayDataModule, params: dict, splits: dict[str, Split]) -> str:
    """A digest of everything the shards would hold: equal digests, equal shards (a re-run skips the work).

    An image folder's pixels are covered by its cache manifest's digest (checksums of every block, and the
    listing of every file with its size, times and inode: the cache's own change rules); other arrays are hashed.
    """
    digest = hashlib.sha256(json.dumps([SHARDS_VERSION, params, datamodule.class_names], sort_keys=True).encode())
    cache = getattr(datamodule, "cache", None)
    for split, s in splits.items():
        digest.update(f"\0{split}\0{json.dumps(s.ids)}".encode("utf-8", "surrogateescape"))
        stored = getattr(s.targets, "stored", s.targets)  # boxes: every image's rows in one array
        digest.update(np.ascontiguousarray(stored).tobytes())
        if s.order is not None:
            digest.update(np.asarray(s.order, dtype=np.int64).tobytes())
        if cache is None:
            digest.update(np.ascontiguousarray(np.asarray(s.images)).tobytes())
    if cache is not None:
        digest.update(str(cache.manifest["digest"]).encode())
    return digest.hexdigest()
