"""Training from LitData shards (``litstarter optimize``'s output) on a local disk or object storage, resumable.

The shards hold what the image-folder cache holds (uint8 images at ``resize_size``, targets, sample ids) and
``shards.json`` what the model is built from, so the links, the augmentation and the eval view are the image
folder's. The train loader is LitData's ``StreamingDataLoader`` itself: its position is saved in every
checkpoint, so a resume from a mid-epoch checkpoint continues with the next batch, and one from a checkpoint whose
epoch had taken its last batch starts the next epoch (Lightning's own rule). ``litdata`` is imported only when this
module sets up (the ``[streaming]`` extra installs it).
"""

from __future__ import annotations

from typing import Literal

import lightning as L
import numpy as np
from jsonargparse import lazy_instance
from lightning.pytorch.utilities import rank_zero_info
from torchvision.transforms import v2

from litstarter._engine.cores import auto_num_workers
from litstarter._engine.images.shards import SHARDS_MANIFEST, is_remote, join, manifest_problem, read_manifest
from litstarter.data.augmentation import FastAugmentation, describe
from litstarter.errors import BadInputError, UsageError


class StreamingDataModule(L.LightningDataModule):
    """Shards written by ``litstarter optimize``: ``root/{train,val[,test]}/`` beside ``root/shards.json``.

    Args:
        root: The shard folder, or an ``s3://bucket/prefix`` (credentials and ``AWS_ENDPOINT_URL`` from the
            environment, as boto3 reads them).
        augmentation: Random training augmentation (as the image folder's); ``null`` turns it off.
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes (LitData starts them by spawn); ``null``: about half the cores.
        seed: Seed for LitData's shuffle and every sample's augmentation.
        sampler: ``none`` only: a stream has no sampler (shuffling is LitData's, by chunk); for imbalance use
            ``model.class_weights: auto`` (the class counts are in ``shards.json``).
        drop_last: Drop the train samples that do not fill a batch on every rank (``null``: LitData's choice,
            which is to drop under DDP so that every rank runs the same number of steps).
        cache_dir: Where chunks streamed from object storage are cached; ``null``: LitData's default.
        max_cache_size: The size that cache may reach (``"50GB"``).
    """

    #: Read by the engine's mid-epoch resume line: this module restores its loader's position itself (see
    #: :meth:`load_state_dict`) and seeds every view by ``(seed, epoch, sample)``, so a resume continues exactly.
    resumes_mid_epoch_exactly = True

    def __init__(
        self,
        root: str,
        augmentation: v2.Transform | None = lazy_instance(FastAugmentation),
        batch_size: int = 64,
        num_workers: int | None = None,
        seed: int = 42,
        sampler: Literal["none", "weighted", "balanced"] = "none",
        drop_last: bool | None = None,
        cache_dir: str | None = None,
        max_cache_size: str = "50GB",
    ) -> None:
        super().__init__()
        if sampler != "none":
            raise UsageError(
                f"data.sampler {sampler!r} cannot apply to a stream (LitData shuffles chunk by chunk); use"
                " data.sampler none with model.class_weights auto"
            )
        if batch_size < 1:
            raise UsageError(f"data.batch_size must be >= 1, got {batch_size}")
        self.root = root if is_remote(root) else str(root).rstrip("/")
        manifest = read_manifest(self.root)
        if manifest is None:
            raise UsageError(
                f"data.root '{root}' has no {SHARDS_MANIFEST}: not a finished `litstarter optimize` output (a killed"
                f" conversion leaves none); run litstarter optimize --output {root}"
            )
        problem = manifest_problem(manifest)
        if problem is not None:
            raise UsageError(f"data.root '{root}': {SHARDS_MANIFEST} cannot be read ({problem}); run optimize again")
        self.manifest = manifest
        # The facts the model is built from (see litstarter.data.base), as the image folder gives them.
        self.class_names = list(manifest["class_names"])
        self.target_kind = str(manifest["target_kind"])  # checked by the task, as the image folder's
        self.ignore_index = int(manifest["params"].get("ignore_index", 255))  # masks: what a mask task skips
        self.channels = int(manifest["channels"])
        self.image_size = tuple(manifest["image_size"])
        self.resize_size = tuple(manifest["resize_size"])
        self.interpolation = manifest.get("interpolation", "bilinear")
        self.augmentation, self.batch_size, self.seed, self.drop_last = augmentation, batch_size, seed, drop_last
        self.num_workers = auto_num_workers() if num_workers is None else num_workers
        self.cache_dir, self.max_cache_size = cache_dir, max_cache_size
        self.train_set = self.val_set = self.test_set = None
        self._train_loader, self._resume = None, None

    @property
    def num_classes(self) -> int:
        """Number of classes, linked into ``model.num_classes`` by the CLI."""
        return len(self.class_names)

    @property
    def test_split(self) -> str:
        """The split that ``test`` evaluates: ``test``, or ``val`` when the shards have no test split."""
        return "test" if "test" in self.manifest["splits"] else "val"

    def _split(self, name: str, shuffle: bool = False):
        from litstarter.data.streaming_dataset import StreamingImages  # needs litdata: only now

        where = join(self.root, name)
        cache_dir = None if self.cache_dir is None else join(self.cache_dir, name)
        encoded = self.manifest.get("storage", "uint8") == "encoded"  # older manifests: uint8
        decode = (self.channels, self.resize_size, self.interpolation) if encoded else None
        return StreamingImages(
            where, self.seed, shuffle, self.drop_last if shuffle else False, cache_dir, self.max_cache_size, decode
        )

    def setup(self, stage: str | None = None) -> None:
        """Open the splits (nothing is read until the loaders stream)."""
        if self.train_set is not None:
            return
        self._check_eval_splits()
        source = self.manifest.get("split_description", "").removeprefix("data: ")  # the source's own data line
        rank_zero_info(f"data: streaming {self.root}, converted from {source}")
        rank_zero_info(f"data: training augmentation: {describe(self.augmentation)}")
        self.train_set, self.val_set = self._split("train", shuffle=True), self._split("val")
        self.test_set = self._split("test") if "test" in self.manifest["splits"] else None

    def _check_eval_splits(self) -> None:
        """Refuse, in one line, an eval split that LitData would give rank 0 none of under DDP: it deals whole
        batches to the ranks and the remainder to the last, so below ``ranks x batch_size`` samples rank 0 has none
        and Lightning stops with a traceback ("zero length")."""
        ranks = getattr(self.trainer, "world_size", 1) if self.trainer is not None else 1
        for name in ("val", "test"):
            count = self.manifest["splits"].get(name, {}).get("count")
            if ranks > 1 and count is not None and count < ranks * self.batch_size:
                fix = f"data.batch_size <= {count // ranks}" if count >= ranks else f"at least {ranks} {name} samples"
                raise UsageError(
                    f"data.root '{self.root}': the {name} split has {count} samples, under one batch for each of the"
                    f" {ranks} ranks (data.batch_size {self.batch_size}), so rank 0 would get none; needs {fix}"
                )

    def _loader(self, dataset, augmentation: v2.Transform | None):
        from litdata import StreamingDataLoader

        from litstarter.data.streaming_dataset import ImageBatch

        on_accelerator = self.trainer is not None and type(self.trainer.accelerator).__name__ != "CPUAccelerator"
        return StreamingDataLoader(
            dataset,
            batch_size=self.batch_size,
            num_workers=self.num_workers,
            pin_memory=on_accelerator,
            collate_fn=ImageBatch(self.image_size, augmentation, boxes=self.target_kind == "boxes"),
            persistent_workers=self.num_workers > 0,
        )

    def train_dataloader(self):
        """LitData's ``StreamingDataLoader`` itself, shuffled, augmented; on resume, at the position the checkpoint
        saved, or at the start of the next epoch when the saved one had taken its last batch (see
        :meth:`load_state_dict`)."""
        self._train_loader = self._loader(self.train_set, self.augmentation)
        resume, self._resume = self._resume, None
        if resume is not None and resume.get("epoch_over"):
            # No position: the loader starts the epoch after the saved one, as an uninterrupted run's would.
            self._train_loader.current_epoch = resume["train_loader"]["current_epoch"]
        elif resume is not None and "train_loader" in resume:
            self._train_loader.load_state_dict(resume["train_loader"])
        return self._train_loader

    def val_dataloader(self):
        """In order, the eval view."""
        return self._loader(self.val_set, None)

    def test_dataloader(self):
        """The test split in order; without one, the val split."""
        return self._loader(self.test_set if self.test_set is not None else self.val_set, None)

    def predict_dataloader(self):
        """As ``test_dataloader``."""
        return self.test_dataloader()

    def class_counts(self) -> np.ndarray:
        """Training samples per class (with each label), ``(num_classes,)``, from ``shards.json`` (for
        ``class_weights: auto``).

        Raises:
            UsageError: the targets have no classes (values).
        """
        if self.manifest["class_counts"] is None:
            raise UsageError(f"data.root '{self.root}' holds {self.target_kind} targets: there are no classes to count")
        return np.asarray(self.manifest["class_counts"], dtype=np.int64)

    def normalization(self) -> tuple[list[float], list[float]]:
        """The train split's per-channel ``(mean, std)``, as the image folder's cache computed it."""
        return list(self.manifest["mean"]), list(self.manifest["std"])

    def state_dict(self) -> dict:
        """Saved in checkpoints: ``class_to_idx``, so a checkpoint knows its classes' names, the train loader's
        position (LitData's ``state_dict``: epoch and samples yielded), and ``epoch_over``: whether Lightning's
        training epoch had taken its last batch (:meth:`_epoch_over`)."""
        state = {"class_to_idx": {name: i for i, name in enumerate(self.class_names)}}
        if self._train_loader is not None:
            state["train_loader"] = self._train_loader.state_dict()
            state["epoch_over"] = self._epoch_over()
        return state

    def _epoch_over(self) -> bool:
        """Whether the fit's training epoch is over as Lightning's loops record it: it has ended (an epoch-end save)
        or taken its last batch (a validation's save after it). A resume then starts the next epoch, so the loader
        must not continue this one's position, which differs when Lightning ends an epoch before the stream does
        (``limit_train_batches``, ``max_time``, a callback's ``should_stop``): continuing the stream's epoch gave the
        resumed epoch the few batches left, no validation ran, and EarlyStopping stopped on ``val/select`` "not
        available"."""
        trainer = self.trainer
        if trainer is None:
            return False
        epoch, batches = trainer.fit_loop.epoch_progress.total, trainer.fit_loop.epoch_loop.batch_progress
        ended = epoch.processed == epoch.started
        return bool(ended or batches.is_last_batch or batches.current.ready >= trainer.num_training_batches)

    def load_state_dict(self, state_dict: dict) -> None:
        """On resume, refuse shards whose classes differ from the checkpoint's, and keep the loader's position for
        :meth:`train_dataloader`. Lightning restores a Stateful train loader itself only if it builds the loader
        after restoring its loops, but the task's ``configure_optimizers`` reads
        ``trainer.estimated_stepping_batches``, which builds it before (Lightning 2.6): the position would be lost and
        the epoch restarted. The data module's own state is restored before either. As Lightning does, the position
        is restored only mid-epoch: a checkpoint saved with ``epoch_over`` starts the next epoch (a checkpoint
        written before ``epoch_over`` was saved continues the loader's position, as then)."""
        saved = state_dict.get("class_to_idx")
        if saved is not None and list(saved) != self.class_names:
            raise BadInputError(
                f"the checkpoint was trained on classes {list(saved)} but data.root '{self.root}' has"
                f" {self.class_names}"
            )
        self._resume = state_dict if "train_loader" in state_dict else None
