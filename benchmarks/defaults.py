"""The image-folder defaults on small image sets nobody tuned them on, beside two linear baselines.

    .venv/bin/python benchmarks/defaults.py [--sets digits28,tiny] [--work DIR] [--label NAME] [--smoke] \
        [-- <fit options>]

Builds the sets of ``benchmarks/defaults_sets.py`` once under ``--work`` (default ``runs/defaults-suite``):
digit photos at 28 px and at 28-64 px, a set where colour is the class, text-like glyphs whose orientation is the
class, crops of real photos at mixed sizes, a tiny set of real grey textures (20 images a class) and a 10:1
imbalanced set. Each has ``train/`` and ``test/``; validation is carved from ``train/``.

For each set it runs, one after another, what a user runs::

    litstarter fit --config configs/default.yaml --config configs/data/image_folder.yaml --data.root <set>

(plus the options after ``--``, to try a change: ``-- --data.augmentation.invert 0``), then fits two
scikit-learn baselines on the same split's raw pixels (averaged down to 16 px, standardised): logistic regression
and an RBF SVC. It prints one table: the network's test accuracy and macro-F1, its epochs, the fit's wall time
(process start to exit: start-up and the cache build included), the median training images per second
(``ThroughputMonitor``'s windows, validation excluded), both baselines, and the network minus the better
baseline, in points. ``--json`` writes the rows too. Nothing is downloaded; the photos ship with scikit-image,
scikit-learn and matplotlib.

``--task detection`` (or ``segmentation``) measures that task's defaults instead, on the sets of
``benchmarks/detection_sets.py`` (boxes as YOLO files, or the same canvases as masks): ``colour`` (1,500 colour
canvases of 64 px, 1 to 3 digits that may overlap), ``grey`` (1,500 grey ones, 1 to 4 smaller digits) and
``small`` (200 canvases of 320 px, 2 to 8 digits of 10 to 18 px; read at 224 px by ``image_size: auto``), each with
its config stacked on the two above, seed 1 (the peer benchmarks' first round: their fit of a set is this one).
Its table: test mAP50-95 and mAP50 (detection) or test mIoU and Dice (segmentation), epochs, wall time and images
per second; no baselines.

    .venv/bin/python benchmarks/defaults.py --task detection [--sets colour,grey,small] [--count N] [-- <options>]

``--smoke`` builds every set into a temporary folder and fits ``tiny`` for one epoch, then 40 ``colour`` canvases
for one epoch with each of the other two tasks: the same code end to end and the same tables, in about two minutes;
the test suite runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))
from defaults_sets import SETS, build  # noqa: E402
from detection_sets import write, write_masks  # noqa: E402

CONFIGS = [REPO / "configs/default.yaml", REPO / "configs/data/image_folder.yaml"]
#: ``--task detection`` / ``segmentation``: ``benchmarks/detection_sets.py``'s kinds (boxes, or the same canvases
#: as masks) -> canvases written; the small-object set's 320 px images are read at 224 px (``image_size: auto``),
#: each costing about 12 of the others'.
TASK_SETS = {"colour": 1500, "grey": 1500, "small": 200}
#: Per task: its config, its set writer and the two test figures its table shows.
TASKS = {
    "detection": (REPO / "configs/task/detection.yaml", write, ("test/map", "test/map50")),
    "segmentation": (REPO / "configs/task/segmentation.yaml", write_masks, ("test/miou", "test/dice")),
}
#: The task sets' seed (``seed_everything`` and ``data.seed`` too): round 1 of the peer benchmarks, whose our-side
#: fit of a set is then this suite's fit of it.
TASK_SEED = 1


def fit(root: Path, runs: Path, name: str, extra: list[str], log: Path, configs: list[Path] = CONFIGS) -> dict:
    """Run ``litstarter fit`` on one set; return its test metrics, epochs and wall time."""
    stack = [a for config in configs for a in ("--config", str(config))]
    command = [sys.executable, "-m", "litstarter", "fit", *stack, "--data.root", str(root)]
    command += ["--trainer.logger.init_args.save_dir", str(runs), "--trainer.logger.init_args.name", name, *extra]
    start = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=os.environ.copy())
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{Path(sys.argv[0]).name}: the fit on {name} failed (exit {done.returncode}); see {log}")
    run = max((runs / name).glob("version_*"), key=lambda p: p.stat().st_mtime)
    metrics = json.loads((run / "metrics.json").read_text())
    return {"metrics": metrics, "epochs": _epochs(run), "seconds": seconds, "rate": _rate(run), "run": str(run)}


def _rate(run: Path) -> float | None:
    """Median training images per second over the fit (ThroughputMonitor's windows: validation excluded)."""
    from tests.helpers import tensorboard_events

    try:
        return float(np.median([e.value for e in tensorboard_events(run).Scalars("train/device/samples_per_sec")]))
    except KeyError:  # a benchmark column, not a check
        return None


def _epochs(run: Path) -> int | None:
    """Epochs the fit ran, from its last checkpoint."""
    import torch

    last = run / "checkpoints" / "last.ckpt"
    try:
        return int(torch.load(last, map_location="cpu", weights_only=True)["epoch"]) + 1
    except Exception:  # a benchmark column, not a check
        return None


def split_pixels(root: Path, cache: Path) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The train and test split of the image-folder defaults (the same listing, seed and carve as the fit), as
    16 px raw pixels: the baselines' input, whatever size the network used."""
    from litstarter.baseline import pixels
    from litstarter.data import ImageFolderDataModule

    data = ImageFolderDataModule(root=str(root), image_size=32, cache_dir=str(cache), num_workers=0)
    data.prepare_data()
    data.setup("fit")
    data.setup("test")
    train, test = data.train_set, data.test_set
    return (pixels(train.images), np.asarray(train.targets)), (pixels(test.images), np.asarray(test.targets))


def baselines(train, test) -> dict[str, tuple[float, float]]:
    """Test accuracy and macro-F1 of logistic regression and an RBF SVC on standardised pixels."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    scores = {}
    for name, model in {"logreg": LogisticRegression(max_iter=2000), "svc": SVC()}.items():
        predicted = make_pipeline(StandardScaler(), model).fit(*train).predict(test[0])
        scores[name] = (accuracy_score(test[1], predicted), f1_score(test[1], predicted, average="macro"))
    return scores


def row(name: str, result: dict, scores: dict) -> dict:
    """One table row: the network against the better baseline (by accuracy)."""
    acc, f1 = result["metrics"]["test/acc"], result["metrics"]["test/f1_macro"]
    best = max(s[0] for s in scores.values())
    return {
        "set": name,
        "acc": acc,
        "f1_macro": f1,
        "epochs": result["epochs"],
        "seconds": result["seconds"],
        "images_per_s": result["rate"],
        "logreg_acc": scores["logreg"][0],
        "logreg_f1": scores["logreg"][1],
        "svc_acc": scores["svc"][0],
        "svc_f1": scores["svc"][1],
        "margin_points": 100 * (acc - best),
        "engine_baseline_acc": result["metrics"].get("test/baseline_acc"),
        "run": result["run"],
    }


def print_table(rows: list[dict], label: str) -> None:
    """The suite's one table."""
    print(f"\ndefaults suite ({label}): test accuracy / macro-F1; baselines on 16 px raw pixels")
    head = (
        f"{'set':<13} {'acc':>6} {'f1':>6} {'ep':>3} {'wall s':>7} {'img/s':>6} {'logreg':>13} {'svc':>13}"
        f" {'vs best':>8}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        rate = f"{r['images_per_s']:>6.0f}" if r["images_per_s"] else f"{'-':>6}"
        print(
            f"{r['set']:<13} {r['acc']:>6.3f} {r['f1_macro']:>6.3f} {r['epochs'] or 0:>3} {r['seconds']:>7.1f} {rate}"
            f" {r['logreg_acc']:>6.3f}/{r['logreg_f1']:.3f} {r['svc_acc']:>6.3f}/{r['svc_f1']:.3f}"
            f" {r['margin_points']:>+7.1f}"
        )
    print("vs best: network accuracy minus the better baseline's, in points (>= -1 is the target)")


def build_task_set(task: str, name: str, work: Path, count: int) -> Path:
    """The ``count`` canvases of kind ``name`` for ``task`` under ``work``, written once (a ``.done`` marker)."""
    root = work / "sets" / f"{task}-{name}-{count}"
    done = root.with_name(f"{root.name}.done")
    if not done.is_file():
        TASKS[task][1](name, root, count, TASK_SEED)
        done.write_text("")
    return root


def print_task_table(rows: list[dict], task: str, label: str) -> None:
    """A detection or segmentation suite's table: its two test figures per set."""
    figures = TASKS[task][2]
    print(f"\ndefaults suite, {task} ({label}): {' / '.join(figures)} on the test split")
    head = f"{'set':<8} {'canvases':>8} {figures[0]:>10} {figures[1]:>10} {'ep':>3} {'wall s':>7} {'img/s':>6}"
    print(head)
    print("-" * len(head))
    for r in rows:
        rate = f"{r['rate']:>6.0f}" if r["rate"] else f"{'-':>6}"
        scores = f"{r[figures[0]]:>10.4f} {r[figures[1]]:>10.4f}"
        print(f"{r['set']:<8} {r['canvases']:>8} {scores} {r['epochs'] or 0:>3} {r['seconds']:>7.1f} {rate}")


def run_task(args: argparse.Namespace, extra: list[str]) -> None:
    """Write, fit and score each of ``args.sets`` for ``args.task`` (detection or segmentation); print the table."""
    config, _, figures = TASKS[args.task]
    names = [n.strip() for n in (args.sets or ",".join(TASK_SETS)).split(",") if n.strip()]
    unknown = [n for n in names if n not in TASK_SETS]
    if unknown:
        raise SystemExit(f"defaults suite: unknown set(s) {', '.join(unknown)}; choose from {', '.join(TASK_SETS)}")
    runs = args.work / "runs" / f"{args.task}-{args.label}"
    runs.mkdir(parents=True, exist_ok=True)
    seeded = [f"--seed_everything={TASK_SEED}", f"--data.seed={TASK_SEED}"]
    rows = []
    for name in names:
        count = args.count or TASK_SETS[name]
        root = build_task_set(args.task, name, args.work, count)
        result = fit(root, runs, name, [*seeded, *extra], runs / f"{name}.log", [*args.configs, config])
        rows.append({"set": name, "canvases": count, **{f: result["metrics"][f] for f in figures}, **result})
        print(json.dumps({k: v for k, v in rows[-1].items() if k not in ("run", "metrics")}), flush=True)
    print_task_table(rows, args.task, f"{args.label}{': ' + ' '.join(extra) if extra else ''}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--task", choices=["classification", *TASKS], default="classification", help="whose defaults to measure"
    )
    parser.add_argument(
        "--sets", help=f"comma-separated, from {', '.join(SETS)} (detection, segmentation: {', '.join(TASK_SETS)})"
    )
    parser.add_argument("--count", type=int, help=f"canvases per detection/segmentation set (default {TASK_SETS})")
    parser.add_argument("--work", type=Path, default=REPO / "runs" / "defaults-suite")
    parser.add_argument("--label", default="defaults", help="names this run's folder and its table")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--configs", type=Path, nargs="+", default=CONFIGS, help="the config stack to fit with")
    parser.add_argument("--smoke", action="store_true", help="every set built, tiny fitted for 1 epoch, in a temp dir")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    if not args.smoke:
        run_task(args, extra) if args.task in TASKS else run(args, extra)
        return
    with tempfile.TemporaryDirectory(prefix="defaults-smoke-") as tmp:
        args.work, args.sets, args.json = Path(tmp), "tiny", None
        for name in SETS:  # every builder runs; one set is fitted
            build(name, args.work / "sets")
        print(f"built {len(SETS)} sets: {', '.join(SETS)}", flush=True)
        run(args, [*extra, "--trainer.max_epochs=1"])
        args.sets, args.count = "colour", 40
        for args.task in TASKS:  # each task's sets fitted for one epoch on 40 canvases
            run_task(args, [*extra, "--trainer.max_epochs=1"])


def run(args: argparse.Namespace, extra: list[str]) -> None:
    """Build, fit and score each of ``args.sets``; print the table."""
    names = [n.strip() for n in (args.sets or ",".join(SETS)).split(",") if n.strip()]
    unknown = [n for n in names if n not in SETS]
    if unknown:
        raise SystemExit(f"defaults suite: unknown set(s) {', '.join(unknown)}; choose from {', '.join(SETS)}")
    runs = args.work / "runs" / args.label
    runs.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        root = build(name, args.work / "sets")
        result = fit(root, runs, name, extra, runs / f"{name}.log", args.configs)
        scores = baselines(*split_pixels(root, args.work / "baseline-cache"))
        rows.append(row(name, result, scores))
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "run"}), flush=True)
    print_table(rows, f"{args.label}{': ' + ' '.join(extra) if extra else ''}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
