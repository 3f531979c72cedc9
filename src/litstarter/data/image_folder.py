"""Your own images in folders, cached once as uint8 arrays, with imbalance samplers and loud bad-file handling."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Literal

from lightning.pytorch.utilities import rank_zero_info
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, Sampler

from litstarter.cores import available_cores
from litstarter.data.base import ArrayDataModule
from litstarter.data.cache import ImageCache, bad_files_error, build_cache, cache_key, load_cache, warn_skipped
from litstarter.data.channels import channels_for, header_modes
from litstarter.data.class_subset import select_classes
from litstarter.data.dataset import ArrayImageDataset
from litstarter.data.folder_layout import Listing, SourceFile, detect_layout, list_sources
from litstarter.data.samplers import BalancedBatchSampler, ClassWeightedSampler
from litstarter.data.transforms import Augmentation
from litstarter.preprocess import as_size, cache_size_for

#: Where caches go when ``cache_dir`` is not set (relative to the working directory, beside the runs).
DEFAULT_CACHE_DIR = Path("runs") / "cache"
#: Below this many files the cache is built in this process: starting decoder processes would cost more.
MIN_FILES_FOR_WORKERS = 500


class ImageFolderDataModule(ArrayDataModule):
    """Images in class folders (with or without split folders) or named by a labels CSV, as uint8 tensors.

    ``prepare_data`` decodes every file once (convert to ``channels``, resize and centre-crop to a cache size
    a little larger than ``image_size``) into a memory-mapped uint8 cache; it runs once per node under DDP
    while the other processes wait. Later runs reuse the cache while the files and the preprocessing
    parameters are unchanged. Training draws a random resized crop, flip and colour jitter per sample from
    that cache; val and test only centre-crop.

    Args:
        root: The image folder: ``root/<class>/<image>`` (split here by the fractions, stratified and seeded)
            or ``root/{train,val,test}/<class>/<image>`` (splits as given; without val, val is carved from
            train; without test, ``test`` evaluates val). Split folders may also be named ``training``,
            ``valid``, ``validation``, ``dev`` or ``testing``, in any case.
        labels: A CSV of ``path,label[,split]`` rows, relative to ``root`` (as are its paths), used instead of
            class folders; without a ``split`` column the splits come from the fractions.
        image_size: Training and evaluation size: an int or ``[height, width]``.
        channels: Channels every image is converted to: 3 (RGB), 1 (grayscale) or ``auto``: 1 when every
            image is grey (PIL modes 1, L, LA, I;16, I), else 3, from the file headers (logged).
        val_fraction: Fraction of each class held out for validation, wherever there is no val split.
        test_fraction: Fraction of each class held out for testing (``root/<class>`` and a labels file without
            a ``split`` column only); 0 for none.
        sampler: Training sampler: ``none`` (seeded shuffle), ``weighted`` (draws with probability
            1/class count, so classes come about equally often) or ``balanced`` (every batch holds the classes
            equally).
        augmentation: Random training augmentation; ``null`` turns it all off. Val and test never augment.
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes; ``null`` picks about half the cores (0 on one core).
        cache_dir: Folder for the caches; each (root, preprocessing) pair gets a subfolder
            ``<root name>-<hash>``. ``null``: ``runs/cache`` under the working directory. On a filesystem
            shared by several nodes each node builds the cache (safely, side by side) unless it is complete
            already: pre-build it once with one process to save the work.
        cache_workers: Processes that decode while the cache is built; ``null``: every core for 500 files or
            more, else this process.
        on_bad_file: A file that cannot be decoded: ``error`` stops before training with one message listing
            every bad file; ``skip`` leaves them out, warns with the count and lists them in the manifest.
        mean: Per-channel mean (0..1 scale) to normalise with; ``null`` uses the train split's, from the cache.
        std: Per-channel std (0..1 scale) to normalise with; ``null`` uses the train split's, from the cache.
        seed: Seed for the split, the sampler and the augmentation.
        classes: Train on these class folders only, labelled 0..K-1 in the order given (the model's
            ``class_names`` follow); ``null``: every class folder, in sorted order. Each kept image lands in the
            split it has with all classes.
    """

    def __init__(
        self,
        root: str,
        labels: str | None = None,
        image_size: int | tuple[int, int] = 224,
        channels: int | Literal["auto"] = "auto",
        val_fraction: float = 0.1,
        test_fraction: float = 0.1,
        sampler: Literal["none", "weighted", "balanced"] = "none",
        augmentation: Augmentation | None = Augmentation(),
        batch_size: int = 64,
        num_workers: int | None = None,
        cache_dir: str | None = None,
        cache_workers: int | None = None,
        on_bad_file: Literal["error", "skip"] = "error",
        mean: list[float] | None = None,
        std: list[float] | None = None,
        seed: int = 42,
        classes: list[str | int] | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, num_workers=num_workers, seed=seed)
        if channels not in (1, 3, "auto"):
            raise ValueError(f"data.channels must be 1, 3 or auto, got {channels!r}")
        if not 0 < val_fraction < 1 or not 0 <= test_fraction < 1 or val_fraction + test_fraction >= 1:
            raise ValueError(
                f"data.val_fraction={val_fraction} must be in (0, 1), data.test_fraction={test_fraction} in [0, 1),"
                " and they must sum to less than 1"
            )
        if sampler not in ("none", "weighted", "balanced"):
            raise ValueError(f"data.sampler must be 'none', 'weighted' or 'balanced', got {sampler!r}")
        if on_bad_file not in ("error", "skip"):
            raise ValueError(f"data.on_bad_file must be 'error' or 'skip', got {on_bad_file!r}")
        if cache_workers is not None and cache_workers < 0:
            raise ValueError(f"data.cache_workers must be >= 0 or null (auto), got {cache_workers}")
        self.root = Path(root).expanduser()
        self.labels = labels
        self.image_size = as_size(image_size)
        self.cache_size = cache_size_for(self.image_size)
        self.val_fraction = val_fraction
        self.test_fraction = test_fraction
        self.sampler = sampler
        self.augmentation = augmentation
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else DEFAULT_CACHE_DIR
        self.cache_workers = cache_workers
        self.on_bad_file = on_bad_file
        self._mean, self._std = mean, std
        # Needed now: the CLI links class_names and channels into the model at instantiation.
        self.layout = detect_layout(self.root, labels)
        self.all_class_names = self.layout.class_names
        self.class_names = select_classes(self.all_class_names, classes, source=f"data.root '{self.root}'")
        self.cache: ImageCache | None = None
        self.channels = self._resolve_channels() if channels == "auto" else channels
        for name, value in (("mean", mean), ("std", std)):
            if value is not None and len(value) != self.channels:
                raise ValueError(f"data.{name} has {len(value)} values but data.channels is {self.channels}")

    @property
    def class_to_idx(self) -> dict[str, int]:
        """Class name -> label index (the kept class names in order); saved in the cache manifest and in checkpoints."""
        return {name: i for i, name in enumerate(self.class_names)}

    def cache_params(self) -> dict:
        """Everything that decides the cache's contents besides the files themselves."""
        params = {
            "root": str(self.root.resolve()),
            "layout": self.layout.kind,
            "channels": self.channels,
            "cache_size": list(self.cache_size),
        }
        if self.layout.kind == "splits":
            params["split_dirs"] = self.layout.split_dirs
        if self.layout.kind == "labels":
            params["labels"] = str(self.layout.labels.resolve())
        if self.layout.kind != "splits" or "val" not in self.layout.split_dirs:  # a split is computed here
            params |= {"val_fraction": self.val_fraction, "test_fraction": self.test_fraction, "seed": self.seed}
        if self.class_names != self.all_class_names:  # a subset (or another order): other files, other labels
            params["classes"] = list(self.class_names)
        return params

    def cache_folder(self) -> Path:
        """This module's cache folder: ``<cache_dir>/<root name>-<hash of cache_params()>``."""
        return self.cache_dir / f"{self.root.resolve().name}-{cache_key(self.cache_params())}"

    def listing(self) -> Listing:
        """Every split's files (of the kept classes, relabelled) and where each split came from."""
        listing = list_sources(self.root, self.layout, self.val_fraction, self.test_fraction, self.seed)
        listing.sources = self._keep_classes(listing.sources)
        return listing

    def _resolve_channels(self) -> int:
        """``channels: auto``: 1 if every image's header says grey, else 3 (logged)."""
        listing = self.listing()
        paths = [self.root / f.path for files in listing.sources.values() for f in files]
        channels, reason = channels_for(header_modes(paths))
        rank_zero_info(f"data.channels: auto -> {channels}: {reason}")
        return channels

    def load_or_build_cache(self) -> ImageCache:
        """List the files, then reuse the cache if it matches them, else build it (with a progress bar)."""
        listing = self.listing()
        sources = listing.sources
        if listing.notes:
            warnings.warn(f"data.root '{self.root}': {listing.notes}", stacklevel=2)
        params, folder = self.cache_params(), self.cache_folder()
        cache = load_cache(folder, params, sources)
        if cache is None:
            total = sum(len(files) for files in sources.values())
            workers = self.cache_workers
            if workers is None:
                workers = available_cores() if total >= MIN_FILES_FOR_WORKERS else 0
            rank_zero_info(f"Building the image cache for {total} files in {folder} ({max(workers, 1)} process(es))")
            cache = build_cache(
                folder, self.root, params, sources, self.class_to_idx, self.channels, self.cache_size,
                on_bad_file=self.on_bad_file, workers=workers,
            )  # fmt: skip
        elif cache.skipped and self.on_bad_file == "error":
            raise bad_files_error(self.root, cache.skipped)
        if cache.manifest["class_to_idx"] != self.class_to_idx:  # a class folder appeared since __init__
            raise ValueError(
                f"the class folders of '{self.root}' changed while loading: {list(cache.manifest['class_to_idx'])}"
                f" != {self.class_names}; restart the run"
            )
        warn_skipped(self.root, folder, cache.skipped)
        counts = {split: int(cache.manifest["splits"][split]["shape"][0]) for split in cache.splits}
        rank_zero_info(listing.summary(counts))
        return cache

    def _keep_classes(self, sources: dict[str, list[SourceFile]]) -> dict[str, list[SourceFile]]:
        """The files of ``class_names`` only, relabelled to their index there (listed and split with all classes,
        so a class's split does not depend on which others are kept)."""
        if self.class_names == self.all_class_names:
            return sources
        new_label = {self.all_class_names.index(name): i for i, name in enumerate(self.class_names)}
        return {
            split: [dataclasses.replace(f, label=new_label[f.label]) for f in files if f.label in new_label]
            for split, files in sources.items()
        }

    def prepare_data(self) -> None:
        """Build the cache if needed. Lightning calls this on one process per node; the others wait."""
        self.cache = self.load_or_build_cache()

    def setup(self, stage: str | None = None) -> None:
        """Open the cached splits (memory-mapped; nothing is read into RAM here)."""
        if self.cache is None:
            self.cache = self.load_or_build_cache()
        if self.train_set is not None:
            return
        cache = self.cache
        self.train_set = ArrayImageDataset(
            cache.images("train"), cache.labels("train"), self.image_size, self.augmentation
        )
        self.val_set = ArrayImageDataset(cache.images("val"), cache.labels("val"), self.image_size)
        if "test" in cache.splits:
            self.test_set = ArrayImageDataset(cache.images("test"), cache.labels("test"), self.image_size)

    def train_sampler(self) -> Sampler | BatchSampler:
        """``none``: a seeded shuffle; ``weighted``: 1/class-count draws; ``balanced``: class-balanced batches."""
        labels = self.train_set.labels
        if self.sampler == "weighted":
            return ClassWeightedSampler(labels, seed=self.seed)
        if self.sampler == "balanced":
            # One process: the whole set. Under DDP Lightning swaps in a DistributedSampler for this rank.
            pool = DistributedSampler(self.train_set, num_replicas=1, rank=0, shuffle=False)
            return BalancedBatchSampler(pool, self.batch_size, labels=labels, seed=self.seed)
        return super().train_sampler()

    def test_dataloader(self) -> DataLoader:
        """The test split in order; without one (``root/{train,val}`` or ``test_fraction: 0``), the val split."""
        if self.test_set is None and self.val_set is not None:
            rank_zero_info(
                f"data.root '{self.root}' has no test split: testing on the val split (not a held-out score;"
                ' metrics.json says "test_split": "val")'
            )
            return self._loader(self.val_set, "val")
        return super().test_dataloader()

    def predict_dataloader(self) -> DataLoader:
        """As ``test_dataloader``: the test split in order, or the val split if there is none."""
        return self.test_dataloader()

    def normalization(self) -> tuple[list[float], list[float]]:
        """The configured mean/std, or the train split's own statistics from the cache manifest."""
        if self._mean is not None and self._std is not None:
            return list(self._mean), list(self._std)
        if self.cache is None:
            self.cache = self.load_or_build_cache()
        return list(self.cache.mean), list(self.cache.std)

    def state_dict(self) -> dict:
        """Saved in checkpoints: ``class_to_idx``, so a checkpoint knows its classes' names."""
        return {"class_to_idx": self.class_to_idx}

    def load_state_dict(self, state_dict: dict) -> None:
        """On resume, refuse a folder whose classes differ from the checkpoint's."""
        saved = state_dict.get("class_to_idx")
        if saved is not None and saved != self.class_to_idx:
            raise ValueError(
                f"the checkpoint was trained on classes {list(saved)} but data.root '{self.root}' has"
                f" {self.class_names}"
            )
