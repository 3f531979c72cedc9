"""Data modules, the uint8 array dataset, the augmentation and the samplers: the seams you fill with your data."""

from litstarter.data.augmentation import FastAugmentation
from litstarter.data.base import ArrayDataModule
from litstarter.data.dataset import ArrayImageDataset
from litstarter.data.digit_boxes import DigitBoxesDataModule
from litstarter.data.digit_counts import DigitCountsDataModule
from litstarter.data.digit_segmentation import DigitSegmentationDataModule
from litstarter.data.digit_sets import DigitSetsDataModule
from litstarter.data.digits import DigitsDataModule
from litstarter.data.image_folder import ImageFolderDataModule
from litstarter.data.samplers import BalancedBatchSampler, ClassWeightedSampler, EpochShuffleSampler, SeedEachItem
from litstarter.data.streaming import StreamingDataModule

__all__ = [
    "ArrayDataModule",
    "ArrayImageDataset",
    "DigitBoxesDataModule",
    "DigitCountsDataModule",
    "DigitSegmentationDataModule",
    "DigitSetsDataModule",
    "DigitsDataModule",
    "FastAugmentation",
    "ImageFolderDataModule",
]
__all__ += ["BalancedBatchSampler", "ClassWeightedSampler", "EpochShuffleSampler", "SeedEachItem"]
__all__ += ["StreamingDataModule"]
