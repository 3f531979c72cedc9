"""Data modules, the shared uint8 array dataset, the image cache, augmentation and samplers."""

from litstarter.cores import auto_num_workers
from litstarter.data.base import ArrayDataModule
from litstarter.data.dataset import ArrayImageDataset
from litstarter.data.digits import DigitsDataModule
from litstarter.data.image_folder import ImageFolderDataModule
from litstarter.data.samplers import BalancedBatchSampler, ClassWeightedSampler, EpochShuffleSampler
from litstarter.data.transforms import Augmentation

__all__ = [
    "ArrayDataModule",
    "ArrayImageDataset",
    "Augmentation",
    "BalancedBatchSampler",
    "ClassWeightedSampler",
    "DigitsDataModule",
    "EpochShuffleSampler",
    "ImageFolderDataModule",
    "auto_num_workers",
]
