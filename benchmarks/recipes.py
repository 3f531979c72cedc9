"""What the accuracy recipes cost and give: plain, + EMA, + MixUp/CutMix, one after another, on one cache.

    .venv/bin/python benchmarks/recipes.py [--images 2000] [--epochs 3]
    .venv/bin/python benchmarks/recipes.py --timm resnet10t [--images 1000] [--epochs 8]

Generates a 10-class folder of 64 px digit photos (the generator the tests use: scikit-learn's digits upscaled,
random ink and background colours, noise, JPEG and PNG), then fits the image-folder default
(``configs/default.yaml`` + ``configs/data/image_folder.yaml``) for ``--epochs`` epochs three times, in one
process: plain, with ``configs/recipe/ema.yaml``, and with ``configs/recipe/mixup_cutmix.yaml`` (mixing on for
every epoch here). Each is tested on the best checkpoint after its fit.

Prints training images per second for each, two ways: by wall time (train-epoch time from its start to its last
batch's end, summed over the epochs: the recipe's per-step work included, validation excluded) and by the
process's CPU time over the same intervals (all its threads, loader workers excluded: what the recipe costs in
compute; other processes on the machine move it less than wall time). Then the test macro-F1, and each
recipe's throughput as a ratio against plain (targets: EMA costs <= 3%, MixUp/CutMix <= 5%, judged on CPU time).
A short untimed fit first builds the cache and warms up, so plain, which runs first, is not penalised. A few
epochs are too few for either recipe to pay off in F1: this measures their cost, not their long-run gain.

``--timm <name>`` compares instead the timm backbone ``timm/<name>`` plain (the image-folder default with that
backbone) against ``configs/experiment/strong.yaml`` with that backbone, at the photos' 64 px, from random init
(nothing downloads) and without its test-time flip (a mirrored digit is another digit, or none); its mixing stops
after 80% of the epochs, as the preset's 40 of 50.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.helpers writes the digit photos (the same generator the tests use)
RECIPE = REPO / "configs" / "recipe"
RUNS = {
    "plain": [],
    "+ EMA": ["--config", str(RECIPE / "ema.yaml")],
    "+ MixUp/CutMix": ["--config", str(RECIPE / "mixup_cutmix.yaml"), "--model.mix_off_after_epoch=null"],
}
TARGET_COST = {"+ EMA": 0.03, "+ MixUp/CutMix": 0.05}
STRONG = REPO / "configs" / "experiment" / "strong.yaml"


def timm_runs(name: str, epochs: int) -> dict[str, list[str]]:
    """``--timm``'s two runs: ``timm/<name>`` plain, and the strong preset with that backbone (see the doc)."""
    backbone = f"--model.backbone=timm/{name}"
    strong = ["--config", str(STRONG), backbone, "--model.weights=null", "--data.image_size=64", "--model.tta=null",
              f"--model.mix_off_after_epoch={max(1, round(0.8 * epochs))}"]  # fmt: skip
    return {f"timm/{name}": [backbone], "+ strong preset": strong}


def train_rate_callback():
    """A callback that sums train-epoch wall and process CPU time (epoch start to its last batch's end)."""
    import lightning as L

    class TrainRate(L.Callback):
        def __init__(self) -> None:
            self.images, self.wall, self.cpu = 0, 0.0, 0.0
            self.start = self.last = (0.0, 0.0)

        def on_train_epoch_start(self, trainer, pl_module) -> None:
            self.start = self.last = (time.perf_counter(), time.process_time())

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            self.last = (time.perf_counter(), time.process_time())
            self.images += len(batch[0])

        def on_train_epoch_end(self, trainer, pl_module) -> None:  # validation ran after the last batch: not counted
            self.wall += self.last[0] - self.start[0]
            self.cpu += self.last[1] - self.start[1]

    return TrainRate()


def fit_and_test(base_args: list[str], extra: list[str], epochs: int, test: bool = True) -> tuple[float, float, float]:
    """Fit, then test the best checkpoint; return (train images/s by wall time, by CPU time, test macro-F1)."""
    from litstarter.cli import LitStarterCLI
    from litstarter.data.base import ArrayDataModule
    from litstarter.task import ImageClassifier

    cli = LitStarterCLI(
        ImageClassifier,
        ArrayDataModule,
        subclass_mode_data=True,
        run=False,
        auto_configure_optimizers=False,
        args=[*base_args, *extra, f"--trainer.max_epochs={epochs}"],
    )
    rate = train_rate_callback()
    cli.trainer.callbacks.append(rate)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    if test:
        cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path="best", verbose=False)
    f1 = float(cli.trainer.callback_metrics.get("test/f1_macro", float("nan")))
    return rate.images / rate.wall, rate.images / rate.cpu, f1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000, help="images in the generated folder (10 classes)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--timm", default=None, help="a timm model name: plain vs the strong preset with it")
    opts = parser.parse_args()
    runs = timm_runs(opts.timm, opts.epochs) if opts.timm else RUNS

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
            "--trainer.enable_progress_bar=false",
        ]
        warm = [*next(iter(runs.values())), "--trainer.limit_train_batches=5"]
        fit_and_test(base, warm, 1, test=False)  # builds the cache, warms up
        results = {name: fit_and_test(base, extra, opts.epochs) for name, extra in runs.items()}
    print(f"\n{opts.images} images, 64 px, 10 classes, {opts.epochs} epochs of the image-folder default")
    plain_wall, plain_cpu, _ = next(iter(results.values()))
    for name, (wall, cpu, f1) in results.items():
        line = f"  {name:15s} {wall:7.1f} images/s (wall)  {cpu:7.1f} images/CPU-s   test macro-F1 {f1:.4f}"
        if name == "+ strong preset":
            line += f"   {wall / plain_wall:.3f}x plain wall, {cpu / plain_cpu:.3f}x CPU"
        if name in TARGET_COST:
            cost, target = 1 - cpu / plain_cpu, TARGET_COST[name]
            verdict = "ok" if cost <= target else "OVER"
            line += f"   {wall / plain_wall:.3f}x plain wall, {cpu / plain_cpu:.3f}x CPU"
            line += f" (CPU cost {cost:+.1%}, target <= {target:.0%}: {verdict})"
        print(line)


if __name__ == "__main__":
    main()
