"""An image folder's settings, listing and cache, without Lightning.

:class:`~litstarter.data.image_folder.ImageFolderDataModule` holds one of these and adds the loaders; a report on
the folder builds one from the same ``data`` config and reads the same cache, so the folder is listed, split and
decoded by one piece of code, and cached once.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from pathlib import Path
from typing import Literal

from litstarter.errors import UsageError

from ..cores import available_cores
from ..targets import TargetKind, target_kind
from .cache import ImageCache, cache_key, load_cache
from .cache_build import bad_files_error, build_cache, warn_skipped
from .channels import channels_for, read_headers
from .classes import select_classes
from .layout import detect_layout, list_sources
from .leakage import warn_leakage
from .mask_classes import mask_classes
from .mask_folders import mask_files
from .preprocess import RESAMPLING, as_size, resize_size_for
from .sizes import auto_side, shrink_note, tile_window
from .splits import Listing, SourceFile

log = logging.getLogger(__name__)

#: Where caches go when ``cache_dir`` is not set (relative to the working directory, beside the runs).
DEFAULT_CACHE_DIR = Path("runs") / "cache"
#: Below this many files the cache is built in this process: starting decoder processes would cost more.
MIN_FILES_FOR_WORKERS = 500


class CachedImageFolder:
    """An image folder (or a labels file) as listed, split and cached for one set of preprocessing parameters.

    Args:
        root: The image folder (see ``ImageFolderDataModule``).
        labels: A CSV of ``path,label[,split]`` rows relative to ``root``, instead of class folders.
        image_size: Training and evaluation size: an int, ``[height, width]`` or ``auto``: the median short side
            of the images (from their headers), a multiple of 8 within 32-224 px (logged).
        channels: Channels every image is converted to: 3, 1 or ``auto`` (1 when every header says grey).
        val_fraction: Fraction of each class held out for validation, wherever there is no val split.
        test_fraction: Fraction of each class held out for testing (``root/<class>`` and labels without split).
        cache_dir: Folder for the caches; ``None``: ``runs/cache`` under the working directory.
        cache_workers: Decoding processes for a build; ``None``: every core for 500 files or more, else none.
        cache_verify: ``sample`` (a few blocks per array on each reuse) or ``full`` (every block).
        on_bad_file: ``error`` or ``skip``.
        seed: Seed for the split.
        classes: Keep these classes only, in this order; ``None``: all, sorted.
        labels_absolute_paths: Let ``labels`` name absolute paths (files on other disks); without it every
            path must be relative to ``root`` and stay inside it.
        interpolation: The resize filter of the cache: ``bilinear`` (also for ``None``) or ``bicubic``.
        crop_pct: The eval crop's fraction of the stored size (a timm backbone's): stored at
            ``floor(image_size / crop_pct)``; ``None``: the target kind's (boxes: 1, the whole image), else
            ``image_size`` x 1.14.
        target_settings: What reading the targets needs: for masks ``ignore_index``, ``mask_resize``, ``binary``;
            for boxes ``on_bad_box`` and ``box_format`` (the one format read; ``None``: what the folder holds).

    Raises:
        UsageError: a value out of range, naming its ``data.*`` key.
    """

    def __init__(
        self,
        root: str | Path,
        labels: str | None = None,
        image_size: int | tuple[int, int] | Literal["auto"] = 224,
        channels: int | Literal["auto"] = "auto",
        val_fraction: float = 0.1,
        test_fraction: float = 0.1,
        cache_dir: str | Path | None = None,
        cache_workers: int | None = None,
        cache_verify: Literal["sample", "full"] = "sample",
        on_bad_file: Literal["error", "skip"] = "error",
        seed: int = 42,
        classes: list[str | int] | None = None,
        labels_absolute_paths: bool = False,
        interpolation: str | None = "bilinear",
        crop_pct: float | None = None,
        target_settings: dict | None = None,
    ) -> None:
        if channels not in (1, 3, "auto"):
            raise UsageError(f"data.channels must be 1, 3 or auto, got {channels!r}")
        if not 0 < val_fraction < 1 or not 0 <= test_fraction < 1 or val_fraction + test_fraction >= 1:
            raise UsageError(
                f"data.val_fraction={val_fraction} must be in (0, 1), data.test_fraction={test_fraction} in [0, 1),"
                " and they must sum to less than 1"
            )
        if cache_workers is not None and cache_workers < 0:
            raise UsageError(f"data.cache_workers must be >= 0 or null (auto), got {cache_workers}")
        if cache_verify not in ("sample", "full"):
            raise UsageError(f"data.cache_verify must be 'sample' or 'full', got {cache_verify!r}")
        if on_bad_file not in ("error", "skip"):
            raise UsageError(f"data.on_bad_file must be 'error' or 'skip', got {on_bad_file!r}")
        self.root = Path(root).expanduser()
        self.labels = labels
        if image_size != "auto":
            try:
                self.image_size = as_size(image_size)
            except ValueError as error:
                raise UsageError(f"data.image_size: {error}") from None
        self.val_fraction = val_fraction
        self.test_fraction = test_fraction
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else DEFAULT_CACHE_DIR
        self.cache_workers = cache_workers
        self.cache_verify = cache_verify
        self.on_bad_file = on_bad_file
        self.seed = seed
        # image_size: auto on masks or boxes it would shrink more than 2x: the windows to train on instead, and the
        # line that says so (sizes.tile_window); None otherwise.
        self.tile_window: int | None = None
        self.shrink_note: str | None = None
        # Needed at once: the CLI links class_names and channels into the model at instantiation.
        box_format = (target_settings or {}).get("box_format")
        self.layout = detect_layout(self.root, labels, labels_absolute_paths, box_format)
        self.target_kind = self.layout.target_kind
        self.all_class_names, settings = self.layout.class_names, dict(target_settings or {})
        if not self.all_class_names and target_kind(self.target_kind).storage == "pixels":  # masks, no classes.txt
            self.all_class_names, settings = mask_classes(self.root, self._mask_paths, settings)
        self.kind: TargetKind = target_kind(self.target_kind).configured(self.root, self.all_class_names, settings)
        if classes is not None and not self.kind.single_class:
            raise UsageError(
                f"data.classes selects classes of one-label data; data.labels '{labels}' holds {self.target_kind}"
                " targets"
            )
        self.class_names = select_classes(self.all_class_names, classes, source=f"data.root '{self.root}'")
        self.channels = channels
        if "auto" in (channels, image_size):
            self._resolve_auto(channels == "auto", image_size == "auto")
        interpolation = interpolation or "bilinear"  # None: unset in a data config read outside the CLI (inspect)
        if interpolation not in RESAMPLING:
            raise UsageError(f"data.interpolation must be one of {sorted(RESAMPLING)}, got {interpolation!r}")
        if crop_pct is not None and not 0 < crop_pct <= 1:
            raise UsageError(f"data.crop_pct must be in (0, 1] or null, got {crop_pct}")
        self.interpolation = interpolation
        self.resize_size = resize_size_for(self.image_size, crop_pct=crop_pct or self.kind.eval_crop)

    def _mask_paths(self) -> list[Path]:
        """Every mask file of a mask layout (folders, or an ``image,mask`` labels file's rows)."""
        if self.layout.labels is not None:
            return [self.root / row.mask for row in self.layout.rows]
        return mask_files(self.root, self.layout.split_dirs)

    @property
    def category_ids(self) -> list | None:
        """The format's own ids of the classes, in index order, where they are not the indices (COCO's category
        ids); ``None`` otherwise."""
        annotated = self.layout.annotated
        return list(annotated.ids) if annotated is not None and annotated.ids is not None else None

    @property
    def class_to_idx(self) -> dict[str, int]:
        """Class name -> label index (the kept class names in order)."""
        return {name: i for i, name in enumerate(self.class_names)}

    def cache_params(self) -> dict:
        """Everything that decides the cache's contents besides the files themselves."""
        params = {
            "root": str(self.root.resolve()),
            "layout": self.layout.kind,
            "channels": self.channels,
            "resize_size": list(self.resize_size),
            "interpolation": self.interpolation,
            "targets": self.target_kind,
            **self.kind.params(),
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
        """This folder's cache: ``<cache_dir>/<root name>-<hash of cache_params()>``."""
        return self.cache_dir / f"{self.root.resolve().name}-{cache_key(self.cache_params())}"

    def listing(self) -> Listing:
        """Every split's files (of the kept classes, relabelled) and where each split came from."""
        listing = list_sources(self.root, self.layout, self.val_fraction, self.test_fraction, self.seed, self.kind)
        listing.sources = self._keep_classes(listing.sources)
        return listing

    def _keep_classes(self, sources: dict[str, list[SourceFile]]) -> dict[str, list[SourceFile]]:
        """The files of ``class_names`` only, relabelled to their index there (listed and split with all classes,
        so a class's split does not depend on which others are kept)."""
        if self.class_names == self.all_class_names:
            return sources
        new_label = {self.all_class_names.index(name): i for i, name in enumerate(self.class_names)}
        return {
            split: [dataclasses.replace(f, target=new_label[f.target]) for f in files if f.target in new_label]
            for split, files in sources.items()
        }

    def _resolve_auto(self, channels: bool, image_size: bool) -> None:
        """``channels: auto`` (1 if every image's header says grey, else 3) and ``image_size: auto`` (from the
        median short side, ``litstarter._engine.images.sizes``), from one pass over the headers; each logged."""
        listing = self.listing()
        modes, sizes = read_headers(self.root / f.path for files in listing.sources.values() for f in files)
        if channels:
            self.channels, reason = channels_for(modes)
            log.info("data.channels: auto -> %d: %s", self.channels, reason)
        if image_size:
            side, reason = auto_side(sizes)
            self.image_size = (side, side)
            log.info("data.image_size: auto -> %d: %s", side, reason)
            # masks, boxes: the windows data.tiles: auto trains on (masks), or the note that suggests them (boxes)
            self.tile_window = tile_window(sizes, side) if self.kind.decoded else None
            self.shrink_note = shrink_note(sizes, side) if self.kind.decoded else None

    def prepare(self) -> tuple[ImageCache, str]:
        """What a fit does with the folder: list it, reuse or build the cache, and warn about what the listing left
        out, bad files skipped and images in more than one split. Returns the cache and the layout line to print."""
        listing = self.listing()
        if listing.notes:
            warnings.warn(f"data.root '{self.root}': {listing.notes}", stacklevel=2)
        cache = self.load_or_build(listing)
        warn_skipped(self.root, cache.folder, cache.skipped)
        self.warn_empty(cache)
        warn_leakage(cache)
        counts = {split: int(cache.manifest["splits"][split]["shape"][0]) for split in cache.splits}
        return cache, listing.summary(counts)

    def warn_empty(self, cache: ImageCache) -> None:
        """One warning line naming the classes (labels) the train split holds none of, as the targets' kind counts
        them (an image, a mask's pixel, a box): the fit cannot learn them, and their scores say nothing."""
        line = self.kind.empty_warning(cache.targets("train"), self.class_names)
        if line:
            log.warning("data.root '%s': %s", self.root, line)  # one line (warnings.warn echoes its source line)

    def load_or_build(self, listing: Listing | None = None, on_bad_file: str | None = None) -> ImageCache:
        """Reuse the cache if it matches the files as listed, else build it (with a progress bar).

        Args:
            listing: :meth:`listing` if the caller has it already.
            on_bad_file: Overrides ``self.on_bad_file`` (``inspect`` builds with ``skip`` to report bad files).

        Raises:
            BadInputError: bad files under ``on_bad_file: error`` (also when a cache built with ``skip`` is reused).
        """
        on_bad_file = on_bad_file or self.on_bad_file
        sources = (listing or self.listing()).sources
        params, folder = self.cache_params(), self.cache_folder()
        cache = load_cache(folder, params, sources, self.class_to_idx, self.cache_verify)
        if cache is None:
            total = sum(len(files) for files in sources.values())
            workers = self.cache_workers
            if workers is None:
                workers = available_cores() if total >= MIN_FILES_FOR_WORKERS else 0
            log.info("Building the image cache for %d files in %s (%d process(es))", total, folder, max(workers, 1))
            cache = build_cache(
                folder,
                self.root,
                params,
                sources,
                self.class_to_idx,
                self.channels,
                self.resize_size,
                on_bad_file=on_bad_file,
                workers=workers,
                kind=self.kind,
            )
        elif cache.skipped and on_bad_file == "error":
            raise bad_files_error(self.root, cache.skipped)
        return cache
