"""Data modules, the shared uint8 array dataset, augmentation and samplers."""

from litstarter.data.base import ArrayDataModule, auto_num_workers
from litstarter.data.dataset import ArrayImageDataset
from litstarter.data.digits import DigitsDataModule
from litstarter.data.transforms import Augmentation

__all__ = ["ArrayDataModule", "ArrayImageDataset", "Augmentation", "DigitsDataModule", "auto_num_workers"]
