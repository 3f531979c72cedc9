"""Lightning's per-step overhead against a hand-written loop, measured side by side in one run.

    .venv/bin/python benchmarks/overhead.py [--epochs 6] [--batch_size 64]

Both loops train the same model (the default config's ImageClassifier) on the same digits loader with the
same optimiser, schedule and clipping. The Trainer runs with the template's default callbacks and logger,
built from configs/default.yaml exactly as `litstarter fit` builds them. We time the interval between
consecutive train-batch starts (data loading + step + every hook), drop the first epoch as warm-up, and
compare medians. The loops alternate ``--repeats`` times (hand, Lightning, Lightning quiet, then again), so a
change in machine load hits all of them alike; each repeat gives its own ratio of median steps. Prints every
repeat's ratio and the median of them: the target (<= 1.05) applies to that median, and every repeat must
stay <= 1.08.

Why the median step and not the mean: step times are skewed to the right. A loader worker that stalls, a
garbage collection, a checkpoint write or another process taking the core adds a few steps that are many
times longer than the rest, and one such outlier moves the mean of a few hundred steps by more than the
overhead we are measuring. The median is the typical step, which is what per-step overhead changes, and it
does not care on which loop the outliers happened to fall. The median of the repeats' ratios does the same
across repeats.

A second figure isolates what observability costs per step: the same Trainer with the default logging
(TensorBoard logger, LearningRateMonitor, ThroughputMonitor, confusion-matrix figures, train/grad_norm) and
progress bar, against the same Trainer with the logger, those callbacks and the progress bar removed
(target <= 1.02).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import LearningRateMonitor, ProgressBar, ThroughputMonitor

from litstarter.callbacks import PlotConfusionMatrix
from litstarter.cli import LitStarterCLI
from litstarter.data.base import ArrayDataModule
from litstarter.task import ImageClassifier

REPO = Path(__file__).resolve().parents[1]


class BatchStartTimes(L.Callback):
    """Records ``time.perf_counter()`` at every train-batch start, per epoch."""

    def __init__(self) -> None:
        self.epochs: list[list[float]] = []

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.epochs.append([])

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.epochs[-1].append(time.perf_counter())


def step_times(epochs: list[list[float]]) -> list[float]:
    """Intervals between consecutive batch starts, within epochs, skipping the first (warm-up) epoch."""
    return [b - a for stamps in epochs[1:] for a, b in zip(stamps, stamps[1:], strict=False)]


def build(args: list[str]) -> LitStarterCLI:
    return LitStarterCLI(
        ImageClassifier,
        ArrayDataModule,
        subclass_mode_data=True,
        run=False,
        auto_configure_optimizers=False,
        save_config_kwargs={"overwrite": True},  # the logger-less runs all save into default_root_dir
        args=args,
    )


# Callbacks that exist only to report (they need a logger or a terminal); removed for the "quiet" run.
REPORTING = (ProgressBar, LearningRateMonitor, ThroughputMonitor, PlotConfusionMatrix)


def lightning_loop(base_args: list[str], epochs: int, extra: list[str] = (), quiet: bool = False) -> list[float]:
    if quiet:
        extra = [*extra, "--trainer.logger=false"]
    cli = build([*base_args, f"--trainer.max_epochs={epochs}", *extra])
    if quiet:
        cli.trainer.callbacks[:] = [c for c in cli.trainer.callbacks if not isinstance(c, REPORTING)]
        assert cli.trainer.progress_bar_callback is None and not cli.trainer.loggers
    timer = BatchStartTimes()
    cli.trainer.callbacks.append(timer)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return step_times(timer.epochs)


def hand_loop(base_args: list[str], epochs: int) -> list[float]:
    cli = build([*base_args, f"--trainer.max_epochs={epochs}"])  # same model/data config, Trainer unused
    model, dm = cli.model, cli.datamodule
    clip = cli.trainer.gradient_clip_val
    dm.setup("fit")
    model.net.set_normalization(*dm.normalization())
    loader = dm.train_dataloader()
    optimizer = model.optimizer(model.parameters())
    scheduler = model.lr_scheduler(optimizer, total_steps=epochs * len(loader))
    model.train()
    times: list[list[float]] = []
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        times.append([])
        for images, labels in loader:
            times[-1].append(time.perf_counter())
            optimizer.zero_grad(set_to_none=True)
            loss = model.criterion(model(images), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            scheduler.step()
    return step_times(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5, help="alternate the loops this many times")
    opts = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory() as tmp:
        base = [
            "--config",
            str(REPO / "configs" / "default.yaml"),
            f"--trainer.logger.init_args.save_dir={tmp}",
            f"--trainer.default_root_dir={tmp}",  # checkpoints of the logger-less run
            f"--data.init_args.batch_size={opts.batch_size}",
        ]
        # Warm-up, discarded: the first fit in a process pays one-off costs (lazy imports, allocator growth,
        # first worker start) that would otherwise land on whichever loop runs first.
        hand_loop(base, 2)
        lightning_loop(base, 2)
        repeats = []
        for _ in range(opts.repeats):  # interleave so drift in machine load hits all alike
            repeat = {
                "hand": statistics.median(hand_loop(base, opts.epochs)),
                "lightning": statistics.median(lightning_loop(base, opts.epochs)),
                "quiet": statistics.median(lightning_loop(base, opts.epochs, quiet=True)),
            }
            repeats.append(repeat)
            print(
                f"repeat {len(repeats)}: median step hand-written {repeat['hand'] * 1e3:.2f} ms, Lightning "
                f"{repeat['lightning'] * 1e3:.2f} ms, Lightning quiet {repeat['quiet'] * 1e3:.2f} ms; "
                f"Lightning / hand-written {repeat['lightning'] / repeat['hand']:.3f}, "
                f"logging on / off {repeat['lightning'] / repeat['quiet']:.3f}",
                flush=True,
            )
    report(repeats)


def report(repeats: list[dict[str, float]]) -> None:
    """Every repeat's ratios, then their medians against the targets."""
    overhead = [r["lightning"] / r["hand"] for r in repeats]
    logging_cost = [r["lightning"] / r["quiet"] for r in repeats]
    print("Lightning / hand-written per repeat: " + ", ".join(f"{x:.3f}" for x in overhead))
    print(
        f"  median {statistics.median(overhead):.3f} (target <= 1.05); worst repeat {max(overhead):.3f} "
        f"(target <= 1.08)"
    )
    print("logging + progress bar on / off per repeat: " + ", ".join(f"{x:.3f}" for x in logging_cost))
    print(f"  median {statistics.median(logging_cost):.3f} (target <= 1.02)")


if __name__ == "__main__":
    main()
