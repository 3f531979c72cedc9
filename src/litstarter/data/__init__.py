"""Data modules, the shared uint8 array dataset, the image cache, augmentation and samplers.

The names below load on first use (PEP 562), so that ``litstarter._engine.images.cache`` and friends import without
Lightning or torch: ``litstarter inspect`` reads a cached folder in a fraction of a second.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_HOMES = {
    "ArrayDataModule": "litstarter.data.base",
    "ArrayImageDataset": "litstarter.data.dataset",
    "BalancedBatchSampler": "litstarter.data.samplers",
    "ClassWeightedSampler": "litstarter.data.samplers",
    "DigitsDataModule": "litstarter.data.digits",
    "EpochShuffleSampler": "litstarter.data.samplers",
    "FastAugmentation": "litstarter._engine.augment.fast",
    "ImageFolderDataModule": "litstarter.data.image_folder",
    "auto_num_workers": "litstarter._engine.cores",
}

__all__ = [
    "ArrayDataModule",
    "ArrayImageDataset",
    "BalancedBatchSampler",
    "ClassWeightedSampler",
    "DigitsDataModule",
    "EpochShuffleSampler",
    "FastAugmentation",
    "ImageFolderDataModule",
    "auto_num_workers",
]

if TYPE_CHECKING:
    from litstarter._engine.augment.fast import FastAugmentation
    from litstarter._engine.cores import auto_num_workers
    from litstarter.data.base import ArrayDataModule
    from litstarter.data.dataset import ArrayImageDataset
    from litstarter.data.digits import DigitsDataModule
    from litstarter.data.image_folder import ImageFolderDataModule
    from litstarter.data.samplers import BalancedBatchSampler, ClassWeightedSampler, EpochShuffleSampler


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'litstarter.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value  # once: later lookups skip this function
    return value
