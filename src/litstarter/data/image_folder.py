"""Your own images in folders (and their masks), cached once as uint8 arrays, with imbalance samplers and loud
bad-file handling."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Literal

from jsonargparse import lazy_instance
from lightning.pytorch.utilities import rank_zero_info
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, Sampler
from torchvision.transforms import v2

from litstarter._engine.images.cache import ImageCache
from litstarter._engine.images.folder import CachedImageFolder
from litstarter._engine.images.label_values import first_non_flag
from litstarter._engine.images.tiled_folder import TiledImageFolder
from litstarter._engine.tiles import Tiling
from litstarter.data.augmentation import FastAugmentation, describe
from litstarter.data.base import ArrayDataModule
from litstarter.data.dataset import ArrayImageDataset
from litstarter.data.samplers import BalancedBatchSampler, ClassWeightedSampler
from litstarter.data.tiles import TiledImageDataset, Tiles, eval_batch
from litstarter.errors import BadInputError, UsageError

log = logging.getLogger(__name__)


@contextlib.contextmanager
def said_once() -> Iterator[None]:
    """The image folder's info lines quieted (the layout's and ``auto``'s, said by a first read of the same folder),
    but for the tiled folder's own."""
    engine, tiled = logging.getLogger("litstarter._engine.images"), logging.getLogger(TiledImageFolder.__module__)
    levels = engine.level, tiled.level
    engine.setLevel(logging.WARNING)
    tiled.setLevel(logging.INFO)
    try:
        yield
    finally:
        engine.setLevel(levels[0])
        tiled.setLevel(levels[1])


class ImageFolderDataModule(ArrayDataModule):
    """Images in class folders (with or without split folders), named by a labels CSV, or beside their masks
    (``root/images`` and ``root/masks``), as uint8 tensors.

    ``prepare_data`` decodes every file once (converted to ``channels``, resized and centre-cropped a little larger
    than ``image_size``) into a memory-mapped uint8 cache, once per node under DDP, reused while the files and the
    preprocessing are unchanged. Training draws its augmentation per sample from it (the fit prints what it draws);
    val and test only centre-crop.

    Args:
        root: The image folder: ``root/<class>/<image>`` (split here by the fractions, stratified and seeded) or
            ``root/{train,val,test}/<class>/<image>`` (as given; without val, val is carved from train; without
            test, ``test`` evaluates val). Split folders may also be ``training``, ``valid``, ``validation``,
            ``dev`` or ``testing``, in any case.
        labels: A CSV of ``path,label[,split]`` rows, relative to ``root`` (as are its paths), instead of class
            folders; without a ``split`` column the splits come from the fractions. A ``labels`` column
            (``;``-separated names) or one 0/1 column per label makes the data multi-label (train it with
            ``configs/task/multilabel.yaml``); numeric columns (``path,age``, ``path,x,y``) make it a regression's
            targets (``configs/task/regression.yaml``; docs/data.md).
        image_size: Training and evaluation size: an int, ``[height, width]`` or ``auto``: the median short side
            of the images (from their headers), a multiple of 8 within 32-224 px (logged).
        channels: 3 (RGB), 1 (grayscale) or ``auto``: 1 when every file header says grey, else 3 (logged).
        val_fraction: Fraction of each class held out for validation, wherever there is no val split.
        test_fraction: Fraction of each class held out for testing, where there is no test split; 0 for none.
        sampler: ``none`` (seeded shuffle), ``weighted`` (drawn with probability 1/class count) or ``balanced``
            (every batch holds the classes equally).
        augmentation: Random training augmentation; ``null`` turns it off. The default is ``FastAugmentation``
            with its defaults (``invert: 0.5`` for shapes whose polarity varies: ink, paint, film, screens).
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes; ``null`` picks about half the cores (0 on one core).
        cache_dir: Folder for the caches, a ``<root name>-<hash>`` subfolder per (root, preprocessing); ``null``:
            ``runs/cache``. On a filesystem shared by nodes each builds it (safely) unless it is complete already.
        cache_workers: Processes that decode while the cache is built; ``null``: every core from 500 files.
        cache_verify: What a reuse checks against the checksums: ``sample`` (a few blocks, ~20 ms) or ``full``.
        on_bad_file: A file that cannot be decoded: ``error`` stops before training, listing every bad file;
            ``skip`` leaves them out, warns with the count and lists them in the manifest.
        mean: Per-channel mean (0..1 scale) to normalise with; ``null``: the train split's, from the cache.
        std: Per-channel std (0..1 scale) to normalise with; ``null``: the train split's, from the cache.
        seed: Seed for the split, the sampler and the augmentation.
        classes: Train on these class folders only, labelled 0..K-1 in the order given; ``null``: every class
            folder, sorted. Each kept image lands in the split it has with all classes.
        labels_absolute_paths: Let ``labels`` name absolute paths (a CSV listing files across disks). Risk: a row
            can then make the run read, cache and train on any file this user may read; a relative path must stay
            inside ``root`` either way.
        interpolation: The filter files are resized with (cache, ``infer``, ``serve``): ``bilinear``, ``bicubic``;
            ``null``: a ``timm/`` backbone's own (its pretrained config's; the CLI fills it in), else bilinear.
        crop_pct: The eval view's centre crop as a fraction of the stored size: images are stored at
            ``floor(image_size / crop_pct)``; ``null``: a ``timm/`` backbone's own, else 1 for boxes (the whole
            image: a crop would cut objects away) and 1 / 1.14 (ImageNet's 224/256) for the rest.
        ignore_index: Masks (``root/images`` beside ``root/masks``, or ``image,mask`` rows): the index of pixels no
            class is learnt or scored on; any other index must name a class.
        mask_resize: Masks: ``refuse`` a mask whose size is not its image's (naming it), or resize it to the image
            by ``nearest`` neighbour.
        binary_masks: Masks: ``true`` reads foreground wherever the mask is not 0 (0/1 and 0/255 PNGs alike),
            classes ``background`` and ``foreground``, no pixel ignored; ``null`` (unset) does so for masks holding
            only 0 and 255 (or 0 and 1) when no ``classes.txt`` or ``palette.json`` names the classes, and one line
            says so; ``false`` reads every mask as class indices (255: ``ignore_index``).
        on_bad_box: Boxes (COCO json, YOLO, a boxes CSV, Pascal VOC, the TensorFlow CSV, LabelMe, CVAT, Label
            Studio: docs/detection.md): a box outside its image, of zero area or with an unknown class, an
            annotation of a missing image, a YOLO line without five fields: ``error`` stops, naming the file and the
            box; ``skip`` leaves them out and counts them.
        box_format: The box format to read where the folder holds two (or to read this one only): ``coco``,
            ``yolo``, ``boxes`` (the ``path,x1,y1,x2,y2,label`` CSV), ``voc``, ``tf_csv``, ``labelme``, ``cvat``,
            ``label_studio``; ``null``: the one the folder (or ``labels``) holds.
        tiles: Masks and boxes: train on windows of the images at their own resolution instead of shrinking them to
            ``image_size`` (``{size: 256, overlap: 64}``; ``overlap`` defaults to a quarter of ``size``, ``max_side``
            to 4096: images kept up to that side); val, test, ``predict``, ``infer`` and ``serve`` slide the windows
            over whole images (docs/segmentation.md, Tiles). ``data.image_size`` is then not read. ``auto``: masks
            that ``image_size: auto`` would shrink more than 2x train on windows of about half their median short
            side (a multiple of 32 within 128-512 px), said in one line; boxes get only that line. ``null``: off.
    """

    def __init__(
        self,
        root: str,
        labels: str | None = None,
        image_size: int | tuple[int, int] | Literal["auto"] = 224,
        channels: int | Literal["auto"] = "auto",
        val_fraction: float = 0.1,
        test_fraction: float = 0.1,
        sampler: Literal["none", "weighted", "balanced"] = "none",
        augmentation: v2.Transform | None = lazy_instance(FastAugmentation),
        batch_size: int = 64,
        num_workers: int | None = None,
        cache_dir: str | None = None,
        cache_workers: int | None = None,
        cache_verify: Literal["sample", "full"] = "sample",
        on_bad_file: Literal["error", "skip"] = "error",
        mean: list[float] | None = None,
        std: list[float] | None = None,
        seed: int = 42,
        classes: list[str | int] | None = None,
        labels_absolute_paths: bool = False,
        interpolation: Literal["bilinear", "bicubic"] | None = None,
        crop_pct: float | None = None,
        ignore_index: int = 255,
        mask_resize: Literal["refuse", "nearest"] = "refuse",
        binary_masks: bool | None = None,
        on_bad_box: Literal["error", "skip"] = "error",
        box_format: Literal["coco", "yolo", "boxes", "voc", "tf_csv", "labelme", "cvat", "label_studio"] | None = None,
        tiles: Tiles | Literal["auto"] | None = "auto",
    ) -> None:
        super().__init__(batch_size=batch_size, num_workers=num_workers, seed=seed)
        if not 0 <= ignore_index <= 255:
            raise UsageError(f"data.ignore_index must be in 0..255 (masks are uint8), got {ignore_index}")
        if mask_resize not in ("refuse", "nearest"):
            raise UsageError(f"data.mask_resize must be 'refuse' or 'nearest', got {mask_resize!r}")
        if on_bad_box not in ("error", "skip"):
            raise UsageError(f"data.on_bad_box must be 'error' or 'skip', got {on_bad_box!r}")
        if sampler not in ("none", "weighted", "balanced"):
            raise UsageError(f"data.sampler must be 'none', 'weighted' or 'balanced', got {sampler!r}")
        # The listing, the split and the cache: the engine's, shared with the reports that read the same cache.
        folder_args = (
            root,
            labels,
            image_size,
            channels,
            val_fraction,
            test_fraction,
            cache_dir,
            cache_workers,
            cache_verify,
            on_bad_file,
            seed,
            classes,
            labels_absolute_paths,
            interpolation,
            crop_pct,
        )
        settings = {
            "ignore_index": ignore_index,
            "mask_resize": mask_resize,
            "binary": binary_masks,
            "on_bad_box": on_bad_box,
            "box_format": box_format,
        }
        self.tiling = None if tiles == "auto" else Tiling.from_value(tiles)  # windows at the images' own size, or None
        if self.tiling is not None:
            self.folder = TiledImageFolder(*folder_args, settings, tiling=self.tiling)
        else:
            self.folder = CachedImageFolder(*folder_args, settings)
            self.tiling = self._auto_tiles() if tiles == "auto" else None
            if self.tiling is not None:  # read again at the images' own size: what was said is not said twice
                folder_args = (*folder_args[:3], self.folder.channels, *folder_args[4:])
                with said_once():
                    self.folder = TiledImageFolder(*folder_args, settings, tiling=self.tiling)
        for name, value in (("mean", mean), ("std", std)):
            if value is not None and len(value) != self.folder.channels:
                raise UsageError(f"data.{name} has {len(value)} values but data.channels is {self.folder.channels}")
        # The facts the model is built from (see litstarter.data.base), and the size the cache stores images at.
        self.root, self.channels, self.class_names = self.folder.root, self.folder.channels, self.folder.class_names
        self.image_size, self.resize_size = self.folder.image_size, self.folder.resize_size
        self.interpolation = self.folder.interpolation  # linked into the model: infer resizes as the cache did
        self.category_ids = self.folder.category_ids  # COCO's own ids: the task records them for infer's results
        # What the targets are, checked by the task: class folders and a `label` column hold one class per image, a
        # multi-label labels file (a `labels` column, or one 0/1 column per label) label sets, numeric columns values.
        self.target_kind = self.folder.target_kind
        self.target_source = f"data.labels '{labels}'" if labels is not None else f"data.root '{self.root}'"
        if not self.folder.kind.single_class and sampler != "none":
            raise UsageError(
                f"data.sampler {sampler!r} balances single classes; {self.target_source} holds {self.target_kind}"
                " targets: it takes 'none'"
            )
        self.sampler = sampler
        self.augmentation = augmentation
        self.ignore_index = ignore_index  # a mask task's loss and metrics skip these pixels
        self._mean, self._std = mean, std
        self.cache: ImageCache | None = None

    def targets_mismatch(self, wanted: str) -> str | None:
        """Why the data's targets are not the ``wanted`` kind (a task's), when one cell of the labels file decides
        it: a stray number in a 0/1 label column, named with its line and column; ``None`` otherwise."""
        if wanted == "label_set" and self.target_kind == "value":
            return first_non_flag(self.folder.layout.labels, self.folder.layout.rows, self.class_names)
        return None

    def load_cache(self) -> ImageCache:
        """Reuse or build the cache (once per module: test-after-fit asks again), and print what was found."""
        if self.cache is None:
            self.cache, layout_line = self.folder.prepare()
            rank_zero_info(layout_line)
            rank_zero_info(f"data: training augmentation: {describe(self.augmentation)}")
        return self.cache

    def prepare_data(self) -> None:
        """Build the cache if needed. Lightning calls this on one process per node; the others wait."""
        self.load_cache()

    def setup(self, stage: str | None = None) -> None:
        """Open the cached splits (memory-mapped; nothing is read into RAM here)."""
        cache = self.load_cache()
        if self.train_set is not None:
            return
        if self.tiling is not None:
            self._setup_tiles(cache)
            return
        train = cache.images("train")
        self.train_set = ArrayImageDataset(train, cache.targets("train"), self.image_size, self.augmentation)
        self.val_set = ArrayImageDataset(cache.images("val"), cache.targets("val"), self.image_size)
        if "test" in cache.splits:
            self.test_set = ArrayImageDataset(cache.images("test"), cache.targets("test"), self.image_size)

    def _auto_tiles(self) -> Tiling | None:
        """``data.tiles: auto``: windows at the images' own size for masks that ``image_size: auto`` would shrink more
        than 2x (thin structures vanish: a 1-3 px curve on 512 px images at 224 px is never learnt, benchmarks/
        thin_structures.py), said in one line; for boxes only the line that suggests them (a window cuts objects
        larger than it); ``None`` otherwise."""
        window, note = self.folder.tile_window, self.folder.shrink_note
        if window is not None and self.folder.kind.storage == "pixels":
            log.info(
                "data.tiles: auto -> windows of %d px at the images' own resolution, since data.image_size: %s and thin"
                " structures vanish at that size (data.tiles: null shrinks them instead)",
                window,
                note.split(": ", 2)[1],
            )
            return Tiling.from_value(window)
        if note:
            log.warning(note)
        return None

    def _setup_tiles(self, cache: ImageCache) -> None:
        """``data.tiles``: crops of the train images for training, the whole val and test images for their scores."""

        def split(name: str, train: bool = False) -> TiledImageDataset:
            images, extents = cache.images(name), cache.extents(name)
            augmentation = self.augmentation if train else None
            data = TiledImageDataset(
                images, cache.targets(name), self.tiling, extents, augmentation, train, self.ignore_index
            )
            data.loader_batch = None if train else eval_batch(self.batch_size, self.resize_size, self.tiling.size)
            return data

        self.train_set, self.val_set = split("train", train=True), split("val")
        self.test_set = split("test") if "test" in cache.splits else None

    def train_sampler(self) -> Sampler | BatchSampler:
        """``none``: a seeded shuffle; ``weighted``: 1/class-count draws; ``balanced``: class-balanced batches."""
        labels = self.train_set.targets
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
        cache = self.load_cache()
        return list(cache.mean), list(cache.std)

    def state_dict(self) -> dict:
        """Saved in checkpoints: ``class_to_idx``, so a checkpoint knows its classes' names."""
        return {"class_to_idx": self.folder.class_to_idx}

    def load_state_dict(self, state_dict: dict) -> None:
        """On resume, refuse a folder whose classes differ from the checkpoint's."""
        saved = state_dict.get("class_to_idx")
        if saved is not None and saved != self.folder.class_to_idx:
            raise BadInputError(
                f"the checkpoint was trained on classes {list(saved)} but data.root '{self.root}' has"
                f" {self.class_names}"
            )
