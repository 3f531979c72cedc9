"""The memmap cache, local LitData shards and per-item decoding, read side by side with the default augmentation.

    .venv/bin/python benchmarks/streaming.py [--images 2000] [--image_size 64] [--workers 2] [--epochs 3] [--smoke]

Needs the ``[streaming]`` extra. Generates data_pipeline.py's folder of JPEGs (10 classes, sides 64-256 px), builds
the image-folder cache, converts the folder to shards with ``litstarter optimize`` (from that cache), then times
training images per second through three loaders with the same batch size, workers and augmentation (the image
folder's default, :class:`~litstarter.data.FastAugmentation`):

* cache: ``ImageFolderDataModule``'s train loader (uint8 memmap, batched augmentation from per-sample seeds);
* shards: ``StreamingDataModule``'s train loader on the local shards (LitData's ``StreamingDataLoader``, the same
  collate and augmentation);
* per-item decoding: a plain ``Dataset`` that opens each file with PIL on every read, resizes it to the cache's
  size, and applies the same augmentation to it alone;
* encoded shards (for information, no target): ``litstarter optimize --encoded``'s shards, which hold the JPEG
  files' bytes and decode each sample at the cache's size while training.

Each loader reads one warm-up epoch (worker start, page cache), then ``--epochs`` timed epochs, alternating between
the loaders so that load drift hits all alike; the median is reported. Targets: shards >= 0.7x the cache and >= 3x
per-item decoding. Also prints the conversion's time against the cache build's, and the size on disk of the
JPEGs, the cache and both kinds of shards. ``--smoke`` (60 JPEGs, one timed epoch, one worker: seconds) runs the same
code end to end and prints the same table; the test suite runs it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
sys.path.insert(0, str(REPO / "benchmarks"))
from data_pipeline import make_jpeg_folder  # noqa: E402  (the same images as the data pipeline benchmark)

# torch, litdata and litstarter are imported inside main(): the cache build's decoder processes start with `spawn`
# and re-import this module, and should not pay for importing Lightning.


class PerItemDecoding:
    """``(image, label)`` per file, decoded with PIL on every read, resized to ``resize_size`` ``(h, w)``, and
    augmented alone to ``size`` from a fresh seed: the pipeline the cache replaces.

    Args:
        paths: The image files.
        labels: Their class indices.
        resize_size: The cache's stored size ``(h, w)``.
        size: The training crop ``(h, w)``.
        augmentation: The augmentation the other two loaders apply.
    """

    def __init__(self, paths: list[Path], labels: list[int], resize_size, size, augmentation) -> None:
        self.paths, self.labels = paths, labels
        self.resize_size, self.size, self.augmentation = tuple(resize_size), tuple(size), augmentation

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int):
        import numpy as np
        import torch
        from PIL import Image

        from litstarter.data.augmentation import augment

        with Image.open(self.paths[index]) as image:
            h, w = self.resize_size
            pixels = np.array(image.convert("RGB").resize((w, h), Image.Resampling.BILINEAR))  # (h, w, 3) uint8
        image = torch.from_numpy(pixels).permute(2, 0, 1).contiguous()  # (3, h, w) uint8
        seed = int(torch.randint(0, 2**62, ()))
        return augment(image[None], self.size, self.augmentation, [seed])[0], self.labels[index]


def disk_size(folder: Path) -> int:
    """Bytes in the files under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def epoch_rate(loader) -> float:
    """Images per second over one epoch of ``loader``."""
    start, seen = time.perf_counter(), 0
    for images, _ in loader:
        seen += len(images)
    return seen / (time.perf_counter() - start)


def interleaved_rates(loaders: dict, epochs: int) -> dict[str, float]:
    """Median images/s per loader over ``epochs`` timed epochs, after one warm-up epoch each."""
    for loader in loaders.values():
        epoch_rate(loader)
    rates = {name: [] for name in loaders}
    for _ in range(epochs):
        for name, loader in loaders.items():
            rates[name].append(epoch_rate(loader))
    return {name: statistics.median(r) for name, r in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000, help="JPEGs to generate (2000 for the claim)")
    parser.add_argument("--image_size", type=int, default=64, help="crop size, as the data pipeline benchmark")
    parser.add_argument("--workers", type=int, default=2, help="loader worker processes, the same for all three")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs per loader, after a warm-up epoch")
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: 60 JPEGs, 1 epoch, 1 worker")
    args = parser.parse_args()
    if args.smoke:
        args.images, args.epochs, args.workers, args.batch_size = 60, 1, 1, 16

    from torch.utils.data import DataLoader

    from litstarter.data import FastAugmentation, ImageFolderDataModule, StreamingDataModule
    from litstarter.extras.streaming.command import main as optimize

    with tempfile.TemporaryDirectory() as tmp:
        root, cache_dir, shards, encoded = (Path(tmp) / name for name in ("jpegs", "cache", "shards", "encoded"))
        make_jpeg_folder(root, args.images)
        folder = {"image_size": args.image_size, "val_fraction": 0.05, "test_fraction": 0.0,
                  "batch_size": args.batch_size, "num_workers": args.workers}  # fmt: skip
        start = time.perf_counter()
        cached = ImageFolderDataModule(str(root), cache_dir=str(cache_dir), augmentation=FastAugmentation(), **folder)
        cached.prepare_data()
        build_s = time.perf_counter() - start
        # optimize takes fit's config stack (the task's among it), as its usage line says.
        data_args = ["--config", str(CONFIGS / "default.yaml"), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
                     f"--data.root={root}", f"--data.cache_dir={cache_dir}",
                     *(f"--data.{k}={v}" for k, v in folder.items()), f"--num_workers={args.workers}"]  # fmt: skip
        convert_s = {}
        for output, extra in ((shards, []), (encoded, ["--encoded"])):
            start = time.perf_counter()
            code = optimize([*data_args, f"--output={output}", *extra])
            convert_s[output.name] = time.perf_counter() - start
            assert code == 0, f"litstarter optimize exited {code}"
        sizes = {folder_.name: disk_size(folder_) / 2**20 for folder_ in (root, cache_dir, shards, encoded)}
        cached.setup("fit")
        streamed, streamed_encoded = (
            StreamingDataModule(str(output), augmentation=FastAugmentation(), batch_size=args.batch_size,
                                num_workers=args.workers) for output in (shards, encoded))  # fmt: skip
        streamed.setup("fit")
        streamed_encoded.setup("fit")
        paths = [root / p for p in cached.cache.column("train", "path")]  # in the train set's order
        labels = [int(label) for label in cached.train_set.targets]
        per_item = PerItemDecoding(paths, labels, streamed.resize_size, streamed.image_size, FastAugmentation())
        decoded = DataLoader(per_item, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                             persistent_workers=args.workers > 0)  # fmt: skip
        loaders = {"cache": cached.train_dataloader(), "shards": streamed.train_dataloader(), "per-item": decoded,
                   "encoded": streamed_encoded.train_dataloader()}  # fmt: skip
        rates = interleaved_rates(loaders, args.epochs)

    print(f"{'pipeline':<44} {'images/s':>10}")
    print(f"{'cache: uint8 memmap + batched augment':<44} {rates['cache']:>10.0f}")
    print(f"{'shards: local LitData + batched augment':<44} {rates['shards']:>10.0f}")
    print(f"{'per-item: PIL decode + resize + augment':<44} {rates['per-item']:>10.0f}")
    print(f"{'encoded shards: LitData + decode + augment':<44} {rates['encoded']:>10.0f}  (no target)")
    print(f"ratio shards / cache: {rates['shards'] / rates['cache']:.2f}x (target >= 0.7x); shards / per-item: "
          f"{rates['shards'] / rates['per-item']:.1f}x (target >= 3x); workers={args.workers}")  # fmt: skip
    print(f"cache build: {build_s:.1f} s; conversion to shards (from the built cache): {convert_s['shards']:.1f} s "
          f"({convert_s['shards'] / build_s:.2f}x the build); --encoded: {convert_s['encoded']:.1f} s")  # fmt: skip
    print("on disk: " + ", ".join(f"{name} {mib:.1f} MiB" for name, mib in sizes.items()))


if __name__ == "__main__":
    main()
