"""A split of LitData shards as ``(image, target, seed)`` items, and the collate that makes the eval or training view.

Imported only when a :class:`~litstarter.data.streaming.StreamingDataModule` sets up (it needs ``litdata``). Both
classes live at module level: loader workers started by spawn unpickle them.

The train loader keeps its workers between epochs (starting them again costs as much as a small epoch), so the
epoch that the loader sets in the main process reaches the workers through a one-element tensor in shared memory:
LitData's own copy in a worker advances only when that worker finishes its epoch, which a cut-short epoch
(``limit_train_batches``) never does.
"""

from __future__ import annotations

import io

import numpy as np
import torch
from litdata import StreamingDataset
from torch.utils.data import get_worker_info
from torchvision.transforms import v2

from litstarter._engine.images.crop import center_crop_or_resize
from litstarter._engine.images.preprocess import load_image
from litstarter._engine.seeds import mix_seed
from litstarter.data.augmentation import augment, augment_with_masks, boxes_view


class StreamingImages(StreamingDataset):
    """A ``litstarter optimize`` split: each item ``((C, H, W) uint8, target, seed)``, the seed a function of
    ``(seed, epoch, sample index)`` alone, so a sample's augmentation is the same in every run, in every worker and
    on a mid-epoch resume, whatever the order LitData streams it in.

    Args:
        input_dir: The split's folder or URL (``<root>/train``).
        seed: Base seed: LitData's shuffle and every sample's augmentation seed.
        shuffle: Shuffle (chunks, then samples within them) every epoch; the train split only.
        drop_last: LitData's: drop the samples that would make the ranks' step counts differ.
        cache_dir: Where remote chunks are cached while streaming; ``None``: LitData's default.
        max_cache_size: The cache's size limit (``"50GB"``).
        decode: ``(channels, resize_size, interpolation)`` for ``--encoded`` shards: each stored file is decoded by
            the cache's own ``load_image``, so its view is the cache's byte for byte; ``None``: uint8 shards.
    """

    def __init__(
        self,
        input_dir: str,
        seed: int = 42,
        shuffle: bool = False,
        drop_last: bool | None = None,
        cache_dir: str | None = None,
        max_cache_size: str = "50GB",
        decode: tuple[int, tuple[int, int], str] | None = None,
    ) -> None:
        super().__init__(
            input_dir,
            cache_dir,
            shuffle=shuffle,
            drop_last=drop_last,
            seed=seed,
            max_cache_size=max_cache_size,
            batch_decode=0,
        )
        # tests/test_compat.py: "litdata StreamingDataset(batch_decode=)"
        # batch_decode=0: each sample decoded alone. LitData's default decodes a 256-row window and keeps one; a
        # worker whose share starts mid-chunk alternates between two windows and decoded 256 rows per sample (seven
        # times slower for that worker, measured on benchmarks/streaming.py's 64 px images).
        self.sample_seed = seed
        self.decode = decode
        self.shared_epoch = torch.zeros(1, dtype=torch.int64).share_memory_()  # the main process's epoch

    def set_epoch(self, current_epoch: int) -> None:
        """LitData's, and publish the epoch to the workers (on a resume, the checkpoint's epoch)."""
        super().set_epoch(current_epoch)
        state = self._state_dict  # tests/test_compat.py: "litdata StreamingDataset._state_dict"
        self.shared_epoch[0] = state["current_epoch"] if state else self.current_epoch

    def __iter__(self):
        if get_worker_info() is not None and int(self.shared_epoch[0]) > 0:  # a worker, kept from an earlier epoch
            epoch = int(self.shared_epoch[0])
            if self._state_dict and self._state_dict["current_epoch"] != epoch:
                self.reset_state_dict()  # a resume position for an epoch that was cut short
            self.current_epoch = epoch
        return super().__iter__()

    def __getitem__(self, index) -> tuple[np.ndarray, int | np.ndarray, int]:
        item = super().__getitem__(index)
        if self.decode is None:
            image = np.asarray(item["image"])  # (C, H, W) uint8
        else:  # the file's bytes: decode, channels, resize as the cache build did
            channels, size, interpolation = self.decode
            image = load_image(io.BytesIO(item["image"]), channels, tuple(size), interpolation=interpolation)
        target = item["target"]  # a class index, a row of numbers (label sets, values), or a mask
        target = int(target) if np.ndim(target) == 0 else np.asarray(target)
        return image, target, mix_seed(self.sample_seed, self.current_epoch, item["index"])


class ImageBatch:
    """The loader's ``collate_fn``: stack a batch, then the training view (``augmentation``, per-sample seeds) or
    the eval view (centre crop), by the same functions as the array dataset's. Returns ``(images (B, C, h, w)
    uint8, targets)``: ``(B,)`` int64 class indices, ``(B, K)`` float32 rows, ``(B, h, w)`` uint8 masks (which get
    their images' geometry), or each image's boxes as ``{"boxes", "labels"}`` (which get it too).

    Args:
        size: Output ``(h, w)``: the data's ``image_size``.
        augmentation: Random augmentation; ``None`` for the eval view.
        boxes: Whether each target is an image's ``(m, 5)`` box rows (the ``boxes`` kind).
    """

    def __init__(self, size: tuple[int, int], augmentation: v2.Transform | None = None, boxes: bool = False) -> None:
        self.size = tuple(size)
        self.augmentation = augmentation
        self.boxes = boxes

    def __call__(self, items: list[tuple[np.ndarray, int | np.ndarray, int]]) -> tuple[torch.Tensor, torch.Tensor]:
        images = torch.from_numpy(np.stack([image for image, _, _ in items]))  # (B, C, H, W) uint8
        targets = [target for _, target, _ in items]
        if self.boxes:
            rows = [torch.from_numpy(np.asarray(t, dtype=np.float32).reshape(-1, 5)) for t in targets]
            return boxes_view(images, rows, self.size, self.augmentation, [seed for _, _, seed in items])
        if isinstance(targets[0], int):
            labels = torch.tensor(targets, dtype=torch.int64)  # (B,)
        else:
            labels = torch.from_numpy(np.stack(targets))  # (B, K) float32, or (B, H, W) uint8 masks
        if labels.ndim == 3 and labels.shape[1:] == images.shape[2:]:  # masks: one geometry for both
            if self.augmentation is None:
                return center_crop_or_resize(images, self.size), center_crop_or_resize(labels, self.size, nearest=True)
            return augment_with_masks(images, labels, self.size, self.augmentation, [seed for _, _, seed in items])
        if self.augmentation is None:
            return center_crop_or_resize(images, self.size), labels
        return augment(images, self.size, self.augmentation, [seed for _, _, seed in items]), labels
