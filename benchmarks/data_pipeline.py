"""The uint8 memmap cache against per-item JPEG decoding, measured side by side in one run.

    .venv/bin/python benchmarks/data_pipeline.py [--images 2000] [--image_size 64] [--workers 2] [--smoke]

Generates a folder of JPEGs (10 classes, each side 64-256 px at random), then times training images per
second through two loaders with the same batch size and the same number of worker processes:

* cached: ``ImageFolderDataModule``'s train loader (decode/convert/resize done once into the cache; each
  sample's random resized crop, flip and colour jitter drawn from its own seed and applied to the whole
  batch at once);
* per-item decoding: torchvision ``ImageFolder`` with PIL, and the same random resized crop, flip and colour
  jitter as PIL transforms, then ``PILToTensor``;
* cached + RandAugment: the same cached loader with a stock torchvision v2 ``RandAugment`` as
  ``data.augmentation`` (per sample, seeded from the sample's seed) in place of the built-in fast augmentation:
  what the fast path buys.

The first epoch of each is a warm-up (worker start, page cache) and is not counted; the timed epochs
alternate between the two loaders, and the median of each is reported. Also prints the cache
build time, the time to reuse the cache when nothing changed, and the share of that reuse spent in the cache's
checks (at most 20 ms or 5%), and what the perceptual hash (for the near-duplicate leakage check) adds to a build:
each file's decode (read, decode, convert, resize, SHA-256) against the batched pHash of its cached array, both
timed in this process on 200 files (target: at most 5%). Target: cached / per-item >= 5x. ``--smoke`` (100 JPEGs,
one timed epoch, one worker: seconds) runs the same code end to end and prints the same table; the test suite runs it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

# torch, torchvision and litstarter.data are imported inside main(): the cache build's decoder processes
# start with `spawn` and re-import this module, and should not pay for importing Lightning.


def make_jpeg_folder(root: Path, n_images: int, seed: int = 0) -> None:
    """``root/<class>/<i>.jpg``: smooth random colour fields plus noise, sides 64-256 px, quality 90."""
    rng = np.random.default_rng(seed)
    for i in range(n_images):
        h, w = rng.integers(64, 257, size=2)
        coarse = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        image = Image.fromarray(coarse).resize((int(w), int(h)), Image.Resampling.BICUBIC)
        pixels = np.clip(np.asarray(image, dtype=np.int16) + rng.integers(-20, 21, (h, w, 3)), 0, 255)
        folder = root / f"class_{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels.astype(np.uint8)).save(folder / f"{i:05d}.jpg", quality=90)


def epoch_rate(loader, epoch: int) -> float:
    """Images per second over one epoch of ``loader``."""
    if hasattr(loader.sampler, "set_epoch"):
        loader.sampler.set_epoch(epoch)
    start, seen = time.perf_counter(), 0
    for images, _ in loader:
        seen += len(images)
    return seen / (time.perf_counter() - start)


def interleaved_rates(loaders: dict, epochs: int) -> dict[str, float]:
    """Median images/s per loader; epochs alternate between loaders so load drift hits both alike."""
    for loader in loaders.values():
        epoch_rate(loader, 0)  # warm-up: worker start, page cache
    rates = {name: [] for name in loaders}
    for epoch in range(1, epochs + 1):
        for name, loader in loaders.items():
            rates[name].append(epoch_rate(loader, epoch))
    return {name: statistics.median(r) for name, r in rates.items()}


def hashing_cost(root: Path, dm, build_s: float, sample: int = 200) -> str:
    """The line on the pHash's share of a build: each file's decode (with its header and SHA-256, as a build does)
    against the batched pHash of the cached arrays, both timed in this process; and hashing every cached array (as
    the build does, in the main process after each split's decode) against the build's wall-clock time."""
    from litstarter._engine.images.cache_build import decode_file
    from litstarter._engine.images.perceptual import phash_batch

    images = dm.cache.images("train")
    paths = [root / path for path in dm.cache.column("train", "path")[:sample]]
    start = time.perf_counter()
    for path in paths:
        decode_file(path, images.shape[1], tuple(images.shape[2:]))
    decode_s = (time.perf_counter() - start) / len(paths)
    start = time.perf_counter()
    phash_batch(images[: len(paths)])
    hash_s = (time.perf_counter() - start) / len(paths)
    start = time.perf_counter()
    for split in dm.cache.splits:
        phash_batch(dm.cache.images(split))
    all_s = time.perf_counter() - start
    return (
        f"perceptual hash: {hash_s * 1e6:.0f} us a file (batched, from the cached arrays) against {decode_s * 1000:.2f}"
        f" ms to decode it ({hash_s / decode_s:.1%}); every cached array hashed in {all_s:.2f} s, {all_s / build_s:.1%}"
        " of the build's wall-clock time (target: at most 5%)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000, help="JPEGs to generate (>= 2000 for the claim)")
    parser.add_argument("--image_size", type=int, default=64, help="crop size, as configs/data/image_folder.yaml")
    parser.add_argument("--workers", type=int, default=2, help="loader worker processes, the same for both")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=5, help="timed epochs per pipeline, after a warm-up epoch")
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: 100 JPEGs, 1 epoch, 1 worker")
    args = parser.parse_args()
    if args.smoke:
        args.images, args.epochs, args.workers, args.batch_size = 100, 1, 1, 16

    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
    from torchvision.transforms import v2

    from litstarter.data import FastAugmentation, ImageFolderDataModule

    with tempfile.TemporaryDirectory() as tmp:
        root, cache_dir = Path(tmp) / "jpegs", Path(tmp) / "cache"
        start = time.perf_counter()
        make_jpeg_folder(root, args.images)
        print(f"generated {args.images} JPEGs (64-256 px) in {time.perf_counter() - start:.1f} s")

        # The image-folder default (inverting half the images), plus a flip, as photos would have.
        aug = FastAugmentation(
            crop_scale=(0.35, 1.0), crop_ratio=(3 / 4, 4 / 3), hflip=0.5, color_jitter=0.1, invert=0.5
        )  # fmt: skip

        def data_module(augmentation=aug) -> ImageFolderDataModule:
            return ImageFolderDataModule(
                str(root), image_size=args.image_size, val_fraction=0.05, test_fraction=0.0, augmentation=augmentation,
                batch_size=args.batch_size, num_workers=args.workers, cache_dir=str(cache_dir),
            )  # fmt: skip

        start = time.perf_counter()
        dm = data_module()
        dm.prepare_data()
        build_s = time.perf_counter() - start
        start = time.perf_counter()
        again = data_module()
        again.prepare_data()
        reuse_s = time.perf_counter() - start
        assert again.cache.reused
        checks = again.cache.check_seconds
        print(
            f"cache build: {build_s:.1f} s; reuse with nothing changed: {reuse_s:.3f} s, of which the cache checks "
            f"(manifest schema, listing digests, checksums of sampled blocks) took {checks * 1000:.1f} ms "
            f"({checks / reuse_s:.1%}; budget: 20 ms or 5%, whichever is larger)"
        )
        print(hashing_cost(root, dm, build_s))
        dm.setup("fit")
        stock = data_module(v2.RandAugment())  # the same cache (augmentation is not part of it)
        stock.setup("fit")

        # The same random transforms, on decoded PIL images (the per-item decoding pipeline).
        per_item = transforms.Compose(
            [
                transforms.RandomResizedCrop(args.image_size, scale=aug.crop_scale, ratio=aug.crop_ratio),
                transforms.RandomHorizontalFlip(aug.hflip),
                transforms.ColorJitter(aug.color_jitter, aug.color_jitter, aug.color_jitter),
                transforms.RandomInvert(aug.invert),
                transforms.PILToTensor(),
            ]
        )
        folder = datasets.ImageFolder(str(root), transform=per_item)  # decodes with PIL per item
        loader = DataLoader(
            folder, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
            persistent_workers=args.workers > 0,
        )  # fmt: skip
        loaders = {"cached": dm.train_dataloader(), "decoded": loader, "randaugment": stock.train_dataloader()}
        rates = interleaved_rates(loaders, args.epochs)
        cached, decoded, randaugment = rates["cached"], rates["decoded"], rates["randaugment"]

    print(f"{'pipeline':<40} {'images/s':>10}")
    print(f"{'cached uint8 memmap + tensor augment':<40} {cached:>10.0f}")
    print(f"{'ImageFolder + PIL decode + augment':<40} {decoded:>10.0f}")
    print(f"{'cached uint8 memmap + v2.RandAugment':<40} {randaugment:>10.0f}")
    print(f"ratio cached / per-item decoding: {cached / decoded:.1f}x  (workers={args.workers}, target >= 5x)")
    print(
        f"ratio cached + RandAugment / per-item decoding: {randaugment / decoded:.1f}x; the fast default augmentation "
        f"is {cached / randaugment:.1f}x the stock RandAugment"
    )


if __name__ == "__main__":
    main()
