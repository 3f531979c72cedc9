"""The template's own per-step cost, and Lightning's against a hand-written loop, measured side by side in one run.

    .venv/bin/python benchmarks/overhead.py [--repeats 12] [--epochs 3] [--batch_size 64] [--smoke]

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

On a shared 2-core VM even the CPU time of one fit swings by a third against the next, so the template's own cost
is also timed inside the template's fit itself: the CPU time spent in our callbacks' per-step hooks, against the
step. Target: that ratio, step / (step - our hooks) <= 1.03 (median of repeats). The fit-against-fit ratio
(template / stock), Lightning / hand-written and logging on / off are printed beside it, with their spread.
``--smoke`` (one repeat of 2 epochs) runs the same code end to end and prints the same lines; the test suite runs it.
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
from litstarter.tasks.base import ImageTask

REPO = Path(__file__).resolve().parents[1]
#: Callbacks that exist only to report (they need a logger or a terminal); removed for the "quiet" loop.
REPORTING = (ProgressBar, LearningRateMonitor, ThroughputMonitor, PlotConfusionMatrix)


class HookClock:
    """The training thread's CPU time spent inside our callbacks' train-step hooks, wrapped in place."""

    HOOKS = ("on_train_batch_start", "on_before_backward", "on_after_backward", "on_before_optimizer_step",
             "on_before_zero_grad", "on_train_batch_end")  # fmt: skip

    def __init__(self, callbacks: list[L.Callback]) -> None:
        self.seconds = 0.0
        for callback in callbacks:
            for name in self.HOOKS:
                hook = getattr(callback, name)
                if getattr(type(callback), name) is not getattr(L.Callback, name):  # overridden: ours to time
                    setattr(callback, name, self.timed(hook))

    def timed(self, hook):
        def run(*args, **kwargs):
            start = time.thread_time()
            try:
                return hook(*args, **kwargs)
            finally:
                self.seconds += time.thread_time() - start

        return run


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
        ImageTask,
        L.LightningDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        run=False,
        auto_configure_optimizers=False,
        save_config_kwargs={"overwrite": True},  # the logger-less runs all save into default_root_dir
        args=args,
    )


def is_ours(callback: L.Callback) -> bool:
    return type(callback).__module__.startswith("litstarter.")


def lightning_loop(base_args: list[str], epochs: int, arm: str) -> tuple[float, float] | tuple[float, float, float]:
    """Median step (wall, CPU) of one fit; the template's also the CPU time per step inside our callbacks' hooks."""
    extra = ["--trainer.logger=false"] if arm == "quiet" else []
    cli = build([*base_args, f"--trainer.max_epochs={epochs}", *extra])
    callbacks = cli.trainer.callbacks
    if arm == "stock":
        callbacks[:] = [c for c in callbacks if not is_ours(c)]
    if arm == "quiet":
        callbacks[:] = [c for c in callbacks if not isinstance(c, REPORTING)]
    clock = HookClock([c for c in callbacks if is_ours(c)]) if arm == "template" else None
    timer = BatchStartTimes()
    callbacks.append(timer)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    wall, cpu = median_steps(timer.epochs)
    if clock is None:
        return wall, cpu
    return wall, cpu, clock.seconds / cli.trainer.global_step


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
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: one repeat of 2 epochs")
    opts = parser.parse_args()
    if opts.smoke:
        opts.repeats, opts.epochs = 1, 2
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
            steps = ", ".join(f"{arm} {times[0] * 1e3:.2f}/{times[1] * 1e3:.2f}" for arm, times in repeat.items())
            hooks = repeat["template"][2] * 1e3
            print(f"repeat {len(repeats)}: median step wall/CPU ms: {steps}; our hooks {hooks:.3f} ms", flush=True)
    report(repeats)


def report(repeats: list[dict[str, tuple[float, ...]]]) -> None:
    """Every repeat's ratios, then their medians and spread against the targets."""

    def line(label: str, ratios: list[float], target: float | None = None) -> None:
        goal = f" (target <= {target})" if target else ""
        spread, each = f"spread {min(ratios):.3f}-{max(ratios):.3f}", ", ".join(f"{x:.3f}" for x in ratios)
        print(f"  {label}: median {statistics.median(ratios):.3f}{goal}, {spread}; per repeat {each}")

    own = [r["template"][1] / (r["template"][1] - r["template"][2]) for r in repeats]
    print("the template's own per-step cost (our callbacks' hooks, timed inside the template's fit)")
    line("CPU, step / step without our hooks", own, 1.03)
    for name, (top, bottom) in [
        ("template / stock, fit against fit (the same cost, through the machine's noise)", ("template", "stock")),
        ("Lightning (template) / hand-written, for information", ("template", "hand")),
        ("logging + progress bar on / off, for information", ("template", "quiet")),
    ]:
        print(name)
        line("CPU ", [r[top][1] / r[bottom][1] for r in repeats])
        line("wall", [r[top][0] / r[bottom][0] for r in repeats])


if __name__ == "__main__":
    main()
