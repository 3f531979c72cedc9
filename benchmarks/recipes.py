"""What the accuracy recipes cost and give: plain, + EMA, + MixUp/CutMix, one after another, on one cache.

    .venv/bin/python benchmarks/recipes.py [--images 2000] [--epochs 3] [--rounds 2] [--smoke]
    .venv/bin/python benchmarks/recipes.py --timm resnet10t [--images 1000] [--epochs 8] [--rounds 1] \
        [--ablate] [--image_size 64]

Generates a 10-class folder of 64 px digit photos (the generator the tests use: scikit-learn's digits upscaled,
random ink and background colours, noise, JPEG and PNG), then fits the image-folder default
(``configs/default.yaml`` + ``configs/data/image_folder.yaml``) for ``--epochs`` epochs three ways, in one
process: plain, with ``configs/recipe/ema.yaml``, and with ``configs/recipe/mixup_cutmix.yaml`` (mixing on for
every epoch here); the three in turn, ``--rounds`` times, so a busy neighbour slows each round's three alike. The
first round's fits are tested on their best checkpoint.

Each training step (batch start to batch end: forward, backward, the optimiser step and the recipe's own per-step
work, the mix before and the EMA update after; the loader's wait and validation are outside it) is timed by wall
clock and by the process's CPU time (all its threads, loader workers excluded: what the recipe costs in compute).
Printed per recipe: images per second at the median step, both ways, and the test macro-F1. Against the targets
(EMA costs <= 3% of the training throughput, MixUp/CutMix <= 5%): the recipe's own work (the EMA update, the batch
mix), timed by CPU inside the same steps, as a share of the steps' CPU time, per round and judged on the median.
Beside it, for information, each round's end-to-end CPU ratio against that round's plain fit: two fits of the same
config differ by several percent on a shared 2-core machine (the loader workers compete with the step for the
cores), more than the costs being measured, so that difference can neither confirm nor refute them. A short
untimed fit first builds the cache and warms up. A few epochs are too few for either recipe to pay off in F1: this
measures their cost, not their long-run gain.

``--timm <name>`` compares instead the timm backbone ``timm/<name>`` plain (the image-folder default with that
backbone) against ``configs/experiment/strong.yaml`` with that backbone, at ``--image_size`` (the photos' 64 px
unless told), from random init (nothing downloads) and without its test-time flip (a mirrored digit is another
digit, or none); its mixing stops after 80% of the epochs, as the preset's 40 of 50. ``--ablate`` adds the preset
without each of its parts in turn (MixUp/CutMix, EMA, layer decay, its learning rate, its warmup, drop path):
which of them costs or gives what.

``--smoke`` (100 images, 1 epoch, 1 round of plain, EMA and MixUp/CutMix) runs the same code end to end and prints the
same lines; the test suite runs it.
"""

from __future__ import annotations

import argparse
import statistics
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


#: ``--ablate``'s parts of the strong preset: each is taken out in turn (its keys deleted, so the image-folder
#: default applies), as (model keys, trainer keys).
PRESET_PARTS = {
    "MixUp/CutMix": (["mixup_alpha", "cutmix_alpha", "mix_off_after_epoch"], []),
    "EMA": ([], ["callbacks+"]),
    "layer decay": (["layer_decay"], []),
    "lr 1e-3": (["optimizer"], []),
    "10% warmup": (["lr_scheduler"], []),
    "drop path": (["backbone_kwargs"], []),
}


def preset_without(part: str, folder: Path) -> Path:
    """A copy of the strong preset in ``folder`` with :data:`PRESET_PARTS`'s ``part`` deleted."""
    import yaml

    preset = yaml.safe_load(STRONG.read_text())
    model_keys, trainer_keys = PRESET_PARTS[part]
    for key in model_keys:
        del preset["model"][key]
    for key in trainer_keys:
        del preset["trainer"][key]
    path = folder / f"strong_without_{len(list(folder.glob('strong_without_*')))}.yaml"
    path.write_text(yaml.safe_dump(preset, sort_keys=False))
    return path


def timm_runs(name: str, epochs: int, image_size: int, ablate: Path | None = None) -> dict[str, list[str]]:
    """``--timm``'s runs: ``timm/<name>`` plain, and the strong preset with that backbone (see the doc); with
    ``ablate`` (a folder for the preset's copies), the preset again without each of :data:`PRESET_PARTS`."""
    backbone = f"--model.backbone=timm/{name}"
    size = f"--data.image_size={image_size}"
    overrides = [backbone, "--model.weights=null", size, "--model.tta=null"]
    mix_off = f"--model.mix_off_after_epoch={max(1, round(0.8 * epochs))}"
    runs = {f"timm/{name}": [backbone, size], "+ strong preset": ["--config", str(STRONG), *overrides, mix_off]}
    for part in PRESET_PARTS if ablate else ():
        keep_mix = [mix_off] if part != "MixUp/CutMix" else []
        runs[f"  - {part}"] = ["--config", str(preset_without(part, ablate)), *overrides, *keep_mix]
    return runs


def train_rate_callback():
    """A callback that records each training step's wall and process CPU time (batch start to batch end: the
    forward, backward and optimiser step, and the recipe's own per-step work: the mix before, the EMA update after)."""
    import lightning as L

    class TrainRate(L.Callback):
        def __init__(self) -> None:
            self.batch, self.walls, self.cpus = 0, [], []
            self.start = (0.0, 0.0)

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            self.start = (time.perf_counter(), time.process_time())

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            if len(batch[0]) == self.batch or not self.batch:  # full batches only: the last one is smaller
                self.batch = len(batch[0])
                self.walls.append(time.perf_counter() - self.start[0])
                self.cpus.append(time.process_time() - self.start[1])

    return TrainRate()


def time_recipe_work(cli) -> list[float]:
    """Wrap the recipe's own per-step work, the EMA callback's update after each batch and the batch mix, so that
    its CPU time adds up in the returned one-item list: measured inside the same steps, so no drift between two
    fits can hide or fake it (what the soft targets change in the loss is left out: a few (B, K) operations)."""
    from lightning.pytorch.callbacks import WeightAveraging

    spent = [0.0]

    def timed(work):
        def run(*args, **kwargs):
            start = time.process_time()
            try:
                return work(*args, **kwargs)
            finally:
                spent[0] += time.process_time() - start

        return run

    for callback in cli.trainer.callbacks:
        if isinstance(callback, WeightAveraging):
            callback.on_train_batch_end = timed(callback.on_train_batch_end)
    if getattr(cli.model, "batch_mix", None) is not None:
        cli.model.batch_mix = timed(cli.model.batch_mix)
    return spent


def fit_and_test(base_args: list[str], extra: list[str], epochs: int, test: bool = True) -> tuple[float, ...]:
    """Fit, then test the best checkpoint; return (train images/s by median step wall time, by median step CPU
    time, test macro-F1 (NaN untested), the recipe's own work as a share of the steps' CPU time)."""
    from litstarter.cli import FIT_CLASSES, LitStarterCLI

    # Built as `litstarter fit` builds it: the task by class path (the classifier, from configs/default.yaml).
    cli = LitStarterCLI(**FIT_CLASSES, run=False, args=[*base_args, *extra, f"--trainer.max_epochs={epochs}"])
    rate = train_rate_callback()
    cli.trainer.callbacks.append(rate)
    recipe = time_recipe_work(cli)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    if test:
        cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path="best", verbose=False)
    f1 = float(cli.trainer.callback_metrics.get("test/f1_macro", float("nan"))) if test else float("nan")
    share = recipe[0] / sum(rate.cpus)  # all steps, the smaller last ones included on both sides
    return rate.batch / statistics.median(rate.walls), rate.batch / statistics.median(rate.cpus), f1, share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000, help="images in the generated folder (10 classes)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="plain, EMA, MixUp fitted in turn, this many times")
    parser.add_argument("--timm", default=None, help="a timm model name: plain vs the strong preset with it")
    parser.add_argument("--ablate", action="store_true", help="with --timm: the preset without each of its parts")
    parser.add_argument("--image_size", type=int, default=64, help="with --timm: both runs' data.image_size")
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: 100 images, 1 epoch, 1 round")
    opts = parser.parse_args()
    if opts.smoke:
        opts.images, opts.epochs, opts.rounds = 100, 1, 1

    from tests.helpers import write_digit_photos

    with tempfile.TemporaryDirectory() as tmp:
        ablate = Path(tmp) if opts.ablate else None
        runs = timm_runs(opts.timm, opts.epochs, opts.image_size, ablate) if opts.timm else RUNS
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
        rounds = [
            {name: fit_and_test(base, extra, opts.epochs, test=r == 0) for name, extra in runs.items()}
            for r in range(opts.rounds)
        ]
    size = f"{opts.image_size} px" if opts.timm else "64 px"
    print(f"\n{opts.images} images, {size}, 10 classes, {opts.epochs} epochs of the image-folder default,", end=" ")
    print(f"{opts.rounds} round(s) of the {len(runs)} in turn")
    plain = next(iter(runs))
    for name in runs:
        walls, cpus = [r[name][0] for r in rounds], [r[name][1] for r in rounds]
        line = f"  {name:17s} {statistics.median(walls):7.1f} images/s (wall)  {statistics.median(cpus):7.1f} "
        line += f"images/CPU-s   test macro-F1 {rounds[0][name][2]:.4f}"
        if name in TARGET_COST:
            ratios = [r[name][1] / r[plain][1] for r in rounds]  # each round against its own plain fit
            shares = [r[name][3] for r in rounds]
            cost, target = statistics.median(shares), TARGET_COST[name]
            line += f"\n      its own work: {', '.join(f'{x:.1%}' for x in shares)} of the steps' CPU by round"
            line += f" (target <= {target:.0%}: {'ok' if cost <= target else 'OVER'});"
            line += f" end to end, CPU {', '.join(f'{x:.3f}' for x in ratios)}x plain by round"
        elif name != plain:  # --timm: the preset against plain
            line += f"   {statistics.median(cpus) / statistics.median(r[plain][1] for r in rounds):.3f}x plain CPU"
        print(line)


if __name__ == "__main__":
    main()
