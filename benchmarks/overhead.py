"""The template's own per-step cost, and Lightning's against a hand-written loop, measured side by side in one run.

    .venv/bin/python benchmarks/overhead.py [--repeats 12] [--epochs 3] [--batch_size 64]

Four loops train the same model (the default config's ImageClassifier) on the same digits loader, with the same
optimiser, schedule and clipping, one torch thread each:

* template: the Trainer as ``litstarter fit --config configs/default.yaml`` builds it, with every callback of
  ours (those the config lists and those the CLI adds);
* stock: the same module, data and Trainer with Lightning's stock callbacks only (ours removed);
* quiet: the template without its reporting (logger, progress bar, LR and throughput monitors, figures);
* hand-written: a plain loop over the same loader, model and optimiser.

Per step, the interval between consecutive train-batch starts (data loading, the step, every hook), the first
epoch of each fit dropped as warm-up, is timed twice: on the wall clock, and as the training thread's own CPU
time (``time.thread_time``: what this process spent, whatever else the machine runs). Each repeat runs the four
loops one after another, so that drift in machine load hits all alike, and gives one ratio of median steps per
pair. The report prints every repeat's ratios, their median and their spread.

Targets: template / stock <= 1.03 (the median of repeats, CPU time: the figure that holds from run to run;
wall clock printed beside it). Lightning / hand-written and logging on / off are printed for information.
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
from litstarter.task import ImageClassifier

REPO = Path(__file__).resolve().parents[1]
#: Callbacks that exist only to report (they need a logger or a terminal); removed for the "quiet" loop.
REPORTING = (ProgressBar, LearningRateMonitor, ThroughputMonitor, PlotConfusionMatrix)


class BatchStartTimes(L.Callback):
    """Records ``(perf_counter, thread_time)`` at every train-batch start, per epoch."""

    def __init__(self) -> None:
        self.epochs: list[list[tuple[float, float]]] = []

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.epochs.append([])

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.epochs[-1].append((time.perf_counter(), time.thread_time()))


def median_steps(epochs: list[list[tuple[float, float]]]) -> tuple[float, float]:
    """Median wall and CPU interval between consecutive batch starts, within epochs, the first epoch skipped."""
    pairs = [(b[0] - a[0], b[1] - a[1]) for stamps in epochs[1:] for a, b in zip(stamps, stamps[1:], strict=False)]
    return statistics.median(w for w, _ in pairs), statistics.median(c for _, c in pairs)


def build(args: list[str]) -> LitStarterCLI:
    return LitStarterCLI(
        ImageClassifier,
        L.LightningDataModule,
        subclass_mode_data=True,
        run=False,
        auto_configure_optimizers=False,
        save_config_kwargs={"overwrite": True},  # the logger-less runs all save into default_root_dir
        args=args,
    )


def is_ours(callback: L.Callback) -> bool:
    return type(callback).__module__.startswith("litstarter.")


def lightning_loop(base_args: list[str], epochs: int, arm: str) -> tuple[float, float]:
    extra = ["--trainer.logger=false"] if arm == "quiet" else []
    cli = build([*base_args, f"--trainer.max_epochs={epochs}", *extra])
    callbacks = cli.trainer.callbacks
    if arm == "stock":
        callbacks[:] = [c for c in callbacks if not is_ours(c)]
    if arm == "quiet":
        callbacks[:] = [c for c in callbacks if not isinstance(c, REPORTING)]
    timer = BatchStartTimes()
    callbacks.append(timer)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return median_steps(timer.epochs)


def hand_loop(base_args: list[str], epochs: int) -> tuple[float, float]:
    cli = build([*base_args, f"--trainer.max_epochs={epochs}"])  # same model/data config, Trainer unused
    model, dm = cli.model, cli.datamodule
    clip = cli.trainer.gradient_clip_val
    dm.setup("fit")
    model.net.set_normalization(*dm.normalization())
    loader = dm.train_dataloader()
    optimizer = model.optimizer(model.parameters())
    scheduler = model.lr_scheduler(optimizer, total_steps=epochs * len(loader))
    model.train()
    stamps: list[list[tuple[float, float]]] = []
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        stamps.append([])
        for images, labels in loader:
            stamps[-1].append((time.perf_counter(), time.thread_time()))
            optimizer.zero_grad(set_to_none=True)
            loss = model.criterion(model(images), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            scheduler.step()
    return median_steps(stamps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3, help="epochs per fit; the first is warm-up")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=12, help="run the four loops this many times, interleaved")
    opts = parser.parse_args()
    torch.set_num_threads(1)  # one thread: the thread's CPU time is then all of the step's compute
    with tempfile.TemporaryDirectory() as tmp:
        base = [
            "--config",
            str(REPO / "configs" / "default.yaml"),
            f"--trainer.logger.init_args.save_dir={tmp}",
            f"--trainer.default_root_dir={tmp}",  # checkpoints of the logger-less run
            f"--data.init_args.batch_size={opts.batch_size}",
            "--test_after_fit=false",
        ]
        # Warm-up, discarded: the first fit in a process pays one-off costs (lazy imports, allocator growth,
        # first worker start) that would otherwise land on whichever loop runs first.
        hand_loop(base, 2)
        lightning_loop(base, 2, "template")
        repeats = []
        for _ in range(opts.repeats):  # interleave so drift in machine load hits all alike
            repeat = {"hand": hand_loop(base, opts.epochs)}
            for arm in ("template", "stock", "quiet"):
                repeat[arm] = lightning_loop(base, opts.epochs, arm)
            repeats.append(repeat)
            steps = ", ".join(f"{arm} {wall * 1e3:.2f}/{cpu * 1e3:.2f}" for arm, (wall, cpu) in repeat.items())
            print(f"repeat {len(repeats)}: median step wall/CPU ms: {steps}", flush=True)
    report(repeats)


def report(repeats: list[dict[str, tuple[float, float]]]) -> None:
    """Every repeat's ratios, then their medians and spread against the targets."""
    for name, (top, bottom), target in [
        ("template / stock (the template's own per-step cost)", ("template", "stock"), 1.03),
        ("Lightning (template) / hand-written", ("template", "hand"), None),
        ("logging + progress bar on / off", ("template", "quiet"), None),
    ]:
        print(name)
        for clock, i in (("CPU", 1), ("wall", 0)):
            ratios = [r[top][i] / r[bottom][i] for r in repeats]
            goal = f" (target <= {target})" if target and clock == "CPU" else ""
            spread = f"spread {min(ratios):.3f}-{max(ratios):.3f}"
            each = ", ".join(f"{x:.3f}" for x in ratios)
            print(f"  {clock:4}: median {statistics.median(ratios):.3f}{goal}, {spread}; per repeat {each}")


if __name__ == "__main__":
    main()
