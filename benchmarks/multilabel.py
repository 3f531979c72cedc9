"""Does the multi-label default learn? Test mean average precision of ``configs/experiment/multilabel.yaml``.

    .venv/bin/python benchmarks/multilabel.py [--images 3000] [--minutes 10] [--seed 0] [--skew 0.75] [--smoke] \
        [-- <extra fit arguments>]

Writes ``--images`` digit composites (``examples/multilabel_digits.py``: 1 to 3 different digits on a 48 px canvas,
skewed label frequencies) to a temporary folder, then runs the command the config opens with, ``litstarter fit --config
configs/default.yaml --config configs/data/image_folder.yaml --config configs/task/multilabel.yaml --config
configs/experiment/multilabel.yaml --data.root <folder>``, with ``--trainer.max_time`` at ``--minutes``, in a
subprocess. Anything after ``--`` is appended to the fit's arguments (an ablation: ``-- --model.pos_weight auto``).

Printed: the test split's mean average precision (macro), its macro F1 at the tuned thresholds and at 0.5, the
epochs trained and the fit's wall time (building the cache and the test included). Target: map_macro >= 0.90
within 10 minutes on 2 cores; run it on a quiet machine (a busy neighbour costs epochs, not accuracy per epoch).
``--smoke`` (100 composites, one epoch) runs the same code end to end and prints the same lines; the test suite runs it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CONFIGS = REPO / "configs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=3000, help="composites in the generated folder")
    parser.add_argument("--minutes", type=float, default=10.0, help="the fit's --trainer.max_time")
    parser.add_argument("--seed", type=int, default=0, help="the generator's seed")
    parser.add_argument("--skew", type=float, default=0.75, help="digit d is drawn with weight skew ** d")
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: 100 composites, 1 epoch")
    parser.add_argument("extra", nargs="*", help="extra fit arguments, after --")
    opts = parser.parse_args()
    if opts.smoke:
        opts.images, opts.extra = 100, [*opts.extra, "--trainer.max_epochs=1"]
    from examples.multilabel_digits import write_composites

    with tempfile.TemporaryDirectory() as tmp:
        root = write_composites(Path(tmp) / "composites", images=opts.images, seed=opts.seed, skew=opts.skew)
        minutes = int(opts.minutes), round(opts.minutes % 1 * 60)
        args = [
            *("--config", str(CONFIGS / "default.yaml"), "--config", str(CONFIGS / "data" / "image_folder.yaml")),
            *("--config", str(CONFIGS / "task" / "multilabel.yaml")),
            *("--config", str(CONFIGS / "experiment" / "multilabel.yaml")),
            f"--data.root={root}",
            f"--data.init_args.cache_dir={tmp}/cache",
            f"--trainer.logger.init_args.save_dir={tmp}/runs",
            f"--trainer.max_time=00:00:{minutes[0]:02d}:{minutes[1]:02d}",
            "--trainer.enable_progress_bar=false",
            *opts.extra,
        ]
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "litstarter", "fit", *args], check=True, cwd=tmp)
        wall = time.perf_counter() - start
        run = next(Path(tmp, "runs").glob("*/version_0"))
        metrics = json.loads((run / "metrics.json").read_text())
        import torch

        last = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    epochs = last["epoch"] + 1
    print(f"\nmultilabel, {opts.images} composites (seed {opts.seed}, skew {opts.skew}),", end=" ")
    print(f"{' '.join(opts.extra) or 'defaults'}:")
    print(f"  test map_macro {metrics['test/map_macro']:.3f}  (target >= 0.90)")
    print(f"  test auroc_macro {metrics['test/auroc_macro']:.3f}")
    for key in ("f1_macro", "f1_micro", "subset_acc", "hamming"):
        tuned, at_half = metrics[f"test/{key}"], metrics[f"test/{key}_at_0.5"]
        print(f"  test {key} {tuned:.3f} at the tuned thresholds, {at_half:.3f} at 0.5")
    print(f"  {epochs} epochs, fit + test {wall / 60:.1f} min")


if __name__ == "__main__":
    main()
