"""What ``litstarter cv`` costs over running its folds' fits by hand, measured side by side in one run.

    .venv/bin/python benchmarks/cv_overhead.py [--folds 3] [--epochs 3] [--smoke]

Runs one ``litstarter cv`` process with k folds of the digits default, then k plain ``litstarter fit`` processes,
one after another, each with one fold's own ``config.yaml`` (``litstarter fit --config <fold>/config.yaml``).
Prints each wall time, the totals and the ratio cv / plain (target <= 1.10).

The cv process pays its start-up once, and per fold what a plain fit does not do: one more validation epoch of
the best checkpoint and the out-of-fold predictions; both sides are counted, because a user waits for both. Each
plain fit's best val/f1_macro is checked against its fold's, so the two sides are known to have trained the same thing.
``--smoke`` (2 folds of 1 epoch) runs the same code end to end and prints the same lines; the test suite runs it.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "configs" / "default.yaml"


def timed(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the process and its children) of ``python -m litstarter ARGS``; raise
    with its output if it fails. CPU time is the steadier figure on a machine that other work shares."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "litstarter", *args], cwd=REPO, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"litstarter {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best_val_f1(run_dir: Path) -> float:
    """The best checkpoint's val/f1_macro, from its name (``epoch=NN-val_select=X``, configs/default.yaml's: macro-F1
    plus a tie-break under 1e-4)."""
    (ckpt,) = [p for p in (run_dir / "checkpoints").glob("*.ckpt") if p.name != "last.ckpt"]
    return float(ckpt.stem.split("val_select=")[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=3, help="Folds, and plain fits (3).")
    parser.add_argument("--epochs", type=int, default=3, help="Epochs per fit (3).")
    parser.add_argument("--smoke", action="store_true", help="A quick end-to-end check: 2 folds of 1 epoch.")
    args = parser.parse_args()
    if args.smoke:
        args.folds, args.epochs = 2, 1
    with tempfile.TemporaryDirectory(prefix="cv_overhead_") as tmp:
        tmp = Path(tmp)
        cv_s = timed(["cv", "--config", str(DEFAULT), "--folds", str(args.folds), f"--trainer.max_epochs={args.epochs}",
                      f"--trainer.logger.init_args.save_dir={tmp / 'cv'}"])  # fmt: skip
        study = tmp / "cv" / "digits" / f"cv-{args.folds}"
        folds = json.loads((study / "cv_metrics.json").read_text())["folds"]
        print(f"cv: {args.folds} folds in one process: {cv_s[0]:.1f} s wall, {cv_s[1]:.1f} s CPU")
        plain = []
        for fold in folds:
            save_dir = tmp / "plain" / str(fold["fold"])
            config = study / f"fold_{fold['fold']}" / "config.yaml"
            plain.append(timed(["fit", "--config", str(config), f"--trainer.logger.init_args.save_dir={save_dir}"]))
            f1, value = best_val_f1(save_dir / "digits" / "version_0"), fold["metrics"]["val/f1_macro"]
            same = "same" if abs(f1 - value) < 1e-3 else "DIFFERENT"
            took = f"{plain[-1][0]:.1f} s wall, {plain[-1][1]:.1f} s CPU"
            print(f"fit {fold['fold']}: {took}, best val/f1_macro {f1:.4f} ({same} as the fold: {value:.4f})")
        wall, cpu = sum(p[0] for p in plain), sum(p[1] for p in plain)
        print(f"plain: {len(plain)} fits one after another: {wall:.1f} s wall, {cpu:.1f} s CPU")
        print(f"ratio cv / plain = {cv_s[0] / wall:.3f} wall (target <= 1.10), {cv_s[1] / cpu:.3f} CPU")


if __name__ == "__main__":
    main()
