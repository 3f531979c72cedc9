"""What ``litstarter tune`` costs over running the same fits by hand, measured side by side in one run.

    .venv/bin/python benchmarks/tune_overhead.py [--trials 4] [--epochs 3] [--smoke]

Runs one ``litstarter tune`` process with N trials of the digits default (configs/search/default.yaml with
pruning off, so every trial runs its full budget), then N plain ``litstarter fit`` processes, one after another
as a user would type them, each with the values one trial drew. Prints each run's wall time, the totals and
the ratio tune / plain (target <= 1.10: the driver, the storage and the callbacks may cost at most 10%).

The tune process pays its start-up (imports, checking the config and search space) once, while each plain fit
pays its own; both are counted, because a user waits for both. Each plain fit's best val/acc is checked against
its trial's value, so the two sides are known to have trained the same thing. ``--smoke`` (2 trials of 1 epoch) runs
the same code end to end and prints the same lines; the test suite runs it.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.helpers reads TensorBoard events
DEFAULT = REPO / "configs" / "default.yaml"
SEARCH = REPO / "configs" / "search" / "default.yaml"


def timed(args: list[str]) -> float:
    """Wall seconds of ``python -m litstarter ARGS``; raise with its output if it fails."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "litstarter", *args], cwd=REPO, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"litstarter {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed


def best_val_acc(run_dir: Path) -> float:
    """The best val/acc the run logged to TensorBoard (the trial's objective is the best over its epochs)."""
    from tests.helpers import tensorboard_events

    return max(event.value for event in tensorboard_events(run_dir).Scalars("val/acc"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=4, help="Trials, and plain fits (4).")
    parser.add_argument("--epochs", type=int, default=3, help="Epochs per fit (3).")
    parser.add_argument("--smoke", action="store_true", help="A quick end-to-end check: 2 trials of 1 epoch.")
    args = parser.parse_args()
    if args.smoke:
        args.trials, args.epochs = 2, 1
    with tempfile.TemporaryDirectory(prefix="tune_overhead_") as tmp:
        tmp = Path(tmp)
        space = yaml.safe_load(SEARCH.read_text())
        space["pruner"] = {"name": "none"}  # every trial runs its whole budget, like a plain fit
        search = tmp / "search.yaml"
        search.write_text(yaml.safe_dump(space))
        common = ["--config", str(DEFAULT), f"--trainer.max_epochs={args.epochs}"]
        tune_dir = f"--trainer.logger.init_args.save_dir={tmp / 'tune'}"
        tune_s = timed(["tune", *common, "--search", str(search), "--trials", str(args.trials), tune_dir])
        with open(tmp / "tune" / "digits" / "tune-search" / "trials.csv", newline="") as f:
            trials = list(csv.DictReader(f))
        print(f"tune: {args.trials} trials in one process: {tune_s:.1f} s")
        plain = []
        for trial in trials:
            values = [f"--{k}={trial[k]}" for k in space["params"]]
            save_dir = tmp / "plain" / trial["number"]
            plain.append(timed(["fit", *common, f"--trainer.logger.init_args.save_dir={save_dir}", *values]))
            acc = best_val_acc(save_dir / "digits" / "version_0")
            value = float(trial["value"])
            same = "same" if abs(acc - value) < 1e-3 else "DIFFERENT"
            print(f"fit {trial['number']}: {plain[-1]:.1f} s, best val/acc {acc:.4f} ({same} as trial: {value:.4f})")
        print(f"plain: {len(plain)} fits one after another: {sum(plain):.1f} s")
        print(f"ratio tune / plain = {tune_s / sum(plain):.3f} (target <= 1.10)")


if __name__ == "__main__":
    main()
