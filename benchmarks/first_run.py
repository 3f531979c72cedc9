"""A user's first run on their own images: the old small_cnn against the new default, side by side in one run.

    .venv/bin/python benchmarks/first_run.py [--images 2000] [--epochs 3] [--smoke]

Generates a 10-class folder of 64 px digit photos (scikit-learn's digits upscaled, random ink and background
colours, noise, JPEG and PNG; ``root/<class>/<image>``), then fits the image-folder default
(``configs/default.yaml`` + ``configs/data/image_folder.yaml``: 64 px, small_cnn, its augmentation, its
splits) for ``--epochs`` epochs twice, in one process, on one cache:

* old: small_cnn with today's widths, no stem and no per-image standardisation
  (``backbone_kwargs: {stem: 1, standardize: false}``), every stage at full size;
* new: the default, which standardises each image and whose stem takes 64 px images to 16 px before the first
  stage.

Prints training images per second for each (the time from each train epoch's start to its last batch's end,
summed over the epochs: data loading included, validation and the one-off cache build excluded), their ratio
(target >= 4x) and the validation accuracy after the last epoch (target: new no worse than old). The fits run
one after the other, so a busy machine moves both; the ratio is the figure to compare between machines. ``--smoke``
(100 images, 1 epoch) runs the same code end to end and prints the same lines; the test suite runs it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.helpers writes the digit photos (the same generator the tests use)

OLD_KWARGS = '--model.backbone_kwargs={"widths": [32, 64, 128], "stem": 1, "standardize": false}'


def train_rate_callback():
    """A callback that sums train-epoch time (epoch start to its last batch's end) and counts the images."""
    import lightning as L

    class TrainRate(L.Callback):
        def __init__(self) -> None:
            self.seconds, self.images, self.start, self.last_end = 0.0, 0, 0.0, 0.0

        def on_train_epoch_start(self, trainer, pl_module) -> None:
            self.start = self.last_end = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            self.last_end = time.perf_counter()
            self.images += len(batch[0])

        def on_train_epoch_end(self, trainer, pl_module) -> None:
            self.seconds += self.last_end - self.start  # validation ran after the last batch: not counted

    return TrainRate()


def fit(base_args: list[str], extra: list[str], epochs: int) -> tuple[float, float, int]:
    """Fit the image-folder default; return (train images/s, val/acc after the last epoch, parameters)."""
    from litstarter.cli import LitStarterCLI
    from litstarter.data.base import ArrayDataModule
    from litstarter.tasks.base import ImageTask

    cli = LitStarterCLI(
        ImageTask,
        ArrayDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        run=False,
        auto_configure_optimizers=False,
        args=[*base_args, f"--trainer.max_epochs={epochs}", *extra],
    )
    rate = train_rate_callback()
    cli.trainer.callbacks.append(rate)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    params = sum(p.numel() for p in cli.model.parameters())
    return rate.images / rate.seconds, float(cli.trainer.callback_metrics["val/acc"]), params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000, help="images in the generated folder (10 classes)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: 100 images, 1 epoch")
    opts = parser.parse_args()
    if opts.smoke:
        opts.images, opts.epochs = 100, 1

    from tests.helpers import write_digit_photos

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "digit_photos"
        per_class = [opts.images // 10 + (d < opts.images % 10) for d in range(10)]
        write_digit_photos(root, {"": per_class}, sizes=(64, 64), seed=0)
        base = [
            "--config",
            str(REPO / "configs" / "default.yaml"),
            "--config",
            str(REPO / "configs" / "data" / "image_folder.yaml"),
            f"--data.root={root}",
            f"--data.init_args.cache_dir={tmp}/cache",
            f"--trainer.logger.init_args.save_dir={tmp}/runs",
        ]
        results = {}
        # new first: its fit builds the cache, outside the timed interval; old then reuses it.
        for name, extra in (("new (stem)", []), ("old (no stem)", [OLD_KWARGS])):
            results[name] = fit(base, extra, opts.epochs)
    print(f"\n{opts.images} images, 64 px, 10 classes, {opts.epochs} epochs of the image-folder default")
    for name, (rate, acc, params) in results.items():
        print(f"  {name:14s} {rate:8.1f} train images/s   val/acc {acc:.4f}   {params / 1e6:.2f} M parameters")
    (new_rate, new_acc, _), (old_rate, old_acc, _) = results.values()
    print(f"ratio new / old images/s: {new_rate / old_rate:.2f}x  (target >= 4x)")
    verdict = "no worse" if new_acc >= old_acc else "WORSE"
    print(f"val/acc new - old: {new_acc - old_acc:+.4f}  ({verdict}; target: new no worse)")


if __name__ == "__main__":
    main()
