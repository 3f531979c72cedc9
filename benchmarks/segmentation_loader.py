"""The cached, mask-aware loader against per-item decoding of images and masks, measured side by side in one run.

    .venv/bin/python benchmarks/segmentation_loader.py [--images 2000] [--image_size 96] [--workers 2] [--smoke]

Generates a mask folder (``images/`` JPEGs of 128-320 px beside ``masks/`` PNGs of class indices, 8 classes), then
times training images per second through two loaders with the same batch size and the same worker processes:

* cached: ``ImageFolderDataModule``'s train loader: images and masks decoded, resized (masks by nearest neighbour)
  and cropped once into the cache; each sample's random resized crop and flip drawn from its seed and applied to the
  batch's images and masks at once, colour jitter to the images;
* per-item: a ``Dataset`` that opens each image and its mask with PIL and applies torchvision v2's
  ``RandomResizedCrop``, ``RandomHorizontalFlip`` and ``ColorJitter`` to the image with its ``tv_tensors.Mask``
  (what a segmentation loader usually is).

The first epoch of each is a warm-up (worker start, page cache); the timed epochs alternate between the loaders and
the median of each is reported. Target: cached / per-item >= 3x. ``--smoke`` (40 pairs at 32 px, one timed epoch,
one worker: seconds) runs the same code end to end and prints the same table; the test suite runs it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_pipeline import interleaved_rates  # noqa: E402  (this folder's helpers, as a script)


def make_mask_folder(root: Path, n_images: int, seed: int = 0) -> None:
    """``root/images/<i>.jpg`` (smooth colour fields, 128-320 px a side) and ``root/masks/<i>.png`` (8 classes in
    blobs), with ``classes.txt``."""
    rng = np.random.default_rng(seed)
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()
    for i in range(n_images):
        h, w = (int(s) for s in rng.integers(128, 321, size=2))
        coarse = rng.integers(0, 8, (6, 6), dtype=np.uint8)
        mask = Image.fromarray(coarse).resize((w, h), Image.Resampling.NEAREST)
        colours = rng.integers(0, 256, (8, 3), dtype=np.uint8)
        pixels = colours[np.asarray(mask)].astype(np.int16) + rng.integers(-20, 21, (h, w, 3))
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(root / "images" / f"{i:05d}.jpg", quality=90)
        mask.save(root / "masks" / f"{i:05d}.png")
    (root / "classes.txt").write_text("\n".join(f"class_{c}" for c in range(8)) + "\n")


class PerItemMasks:
    """Each image and its mask opened with PIL, transformed together by torchvision v2, per item.

    Args:
        root: The mask folder.
        transform: A v2 transform taking ``(image, mask)``.
    """

    def __init__(self, root: Path, transform) -> None:
        self.images = sorted((root / "images").iterdir())
        self.root, self.transform = root, transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        from torchvision import tv_tensors
        from torchvision.transforms.v2 import functional as F

        path = self.images[index]
        with Image.open(path) as image, Image.open(self.root / "masks" / f"{path.stem}.png") as mask:
            image, mask = F.pil_to_tensor(image.convert("RGB")), tv_tensors.Mask(F.pil_to_tensor(mask)[0])
        return self.transform(image, mask)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000, help="image/mask pairs to generate")
    parser.add_argument("--image_size", type=int, default=96, help="crop size of both loaders")
    parser.add_argument("--workers", type=int, default=2, help="loader worker processes, the same for both")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per loader, after a warm-up epoch")
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: 40 pairs, 1 epoch, 1 worker")
    args = parser.parse_args()
    if args.smoke:
        args.images, args.image_size, args.epochs, args.workers, args.batch_size = 40, 32, 1, 1, 8

    from torch.utils.data import DataLoader
    from torchvision.transforms import v2

    from litstarter.data import FastAugmentation, ImageFolderDataModule

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "masks"
        start = time.perf_counter()
        make_mask_folder(root, args.images)
        print(f"generated {args.images} image/mask pairs (128-320 px) in {time.perf_counter() - start:.1f} s")
        aug = FastAugmentation(crop_scale=(0.35, 1.0), hflip=0.5, color_jitter=0.1)
        dm = ImageFolderDataModule(
            str(root), image_size=args.image_size, val_fraction=0.05, test_fraction=0.0, augmentation=aug,
            batch_size=args.batch_size, num_workers=args.workers, cache_dir=str(Path(tmp) / "cache"),
        )  # fmt: skip
        start = time.perf_counter()
        dm.prepare_data()
        print(f"cache build (images and masks): {time.perf_counter() - start:.1f} s")
        dm.setup("fit")
        transform = v2.Compose(
            [
                v2.RandomResizedCrop(args.image_size, scale=aug.crop_scale, ratio=aug.crop_ratio, antialias=True),
                v2.RandomHorizontalFlip(aug.hflip),
                v2.ColorJitter(aug.color_jitter, aug.color_jitter, aug.color_jitter),
            ]
        )
        per_item = DataLoader(
            PerItemMasks(root, transform), batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
            persistent_workers=args.workers > 0,
        )  # fmt: skip
        rates = interleaved_rates({"cached": dm.train_dataloader(), "per_item": per_item}, args.epochs)

    print(f"{'loader':<48} {'images/s':>10}")
    print(f"{'cached uint8 memmaps + batched image/mask augment':<48} {rates['cached']:>10.0f}")
    print(f"{'PIL decode of image and mask + v2 per item':<48} {rates['per_item']:>10.0f}")
    print(f"ratio cached / per-item: {rates['cached'] / rates['per_item']:.1f}x (workers={args.workers}, target >= 3x)")


if __name__ == "__main__":
    main()
