"""Single-label image classification from scratch: our image-folder defaults against fastai's, side by side on the
same image folders, scored by one scorer.

    make peers    # once: fastai's own venv, .peers/fastai (requirements/peers/fastai.txt)
    .venv/bin/python benchmarks/classification_peer_fastai.py [--sets digits_mixed,textures,glyphs] [--rounds 3] \\
        [--epochs 30] [--image_size auto] [--seed 42] [--peer_lr default|find|<lr>] [--work DIR] [--json PATH] \\
        [--smoke]

fastai lives in a venv of its own (``.peers/fastai/bin/python``, or ``$FASTAI_PYTHON``, or ``--peer_python``; an
empty ``$FASTAI_PYTHON`` means none), never in the project's dependencies: its side is
``benchmarks/classification_peer_fastai_driver.py``, run in that venv's Python as a separate process.

The data: ``--sets`` of ``benchmarks/defaults_sets.py``, built once under ``--work`` (default
``runs/classification-peer-fastai``), each ``train/<class>/`` and ``test/<class>/``. Each round, both sides:

* ours: what a user runs, ``litstarter fit --config configs/default.yaml --config configs/data/image_folder.yaml
  --data.root <set> --trainer.max_epochs <epochs>`` (``benchmarks/defaults.py``'s ``fit``) with our defaults
  otherwise (``small_cnn``, AdamW 3e-3, warmup + cosine, our augmentation without flips, label smoothing 0.1, early
  stopping on ``val/select`` after 10 epochs without gain, batch 64, auto loader workers, test after fit and the
  linear baseline check), a fresh cache; then ``litstarter infer`` with its best checkpoint (by ``val/select``) on
  ``test/``, one CSV row per file;
* fastai: the driver, as fastai's docs train an image classifier, without pretrained weights: a ``DataBlock`` with
  ``item_tfms=Resize(size)``, ``batch_tfms=[*aug_transforms(), Normalize.from_stats(*imagenet_stats)]`` (flips
  included), batch 64, fastai's default workers; ``vision_learner(dls, resnet18, pretrained=False,
  metrics=accuracy)``; ``fit_one_cycle(epochs)`` at fastai's default lr (1e-3: the docs' one-line workflow;
  ``--peer_lr find`` uses ``lr_find``'s valley, its time counted); the last epoch's model predicts ``test/``.

Shared: the train files, the validation files (ours' carve of ``train/``, ``val_fraction`` 0.1 per class, seeded:
fastai's ``FuncSplitter`` gets the same list), the test files, ``--image_size`` (``auto``: ours' own choice for the
set, given to both explicitly), the epochs, the batch size, the seed of the round (``--seed`` plus the round's index:
ours' ``seed_everything`` and ``data.seed``, fastai's ``set_seed(seed, reproducible=True)``), torch (the same
version, pinned in fastai's requirements) and one scorer: test accuracy and macro-F1 (scikit-learn) of each side's
predicted class per test file, truth being the file's class folder. Not shared: the network, the optimiser and
schedule, the augmentation (fastai flips, ours does not: on ``glyphs`` a mirrored b is a d), ours' grey input where
every image is grey (fastai reads RGB), the loader workers, the model tested (ours' best checkpoint, fastai's last).

The time is each side's wall time, process start to the end of its test predictions: ours the fit process (start-up,
the cache build, training, validation, the test pass and the baseline check) plus the infer process; fastai's one
process (imports, training, validation, prediction). ``TORCH_HOME`` and ``FASTAI_HOME`` point at an empty temporary
folder in both: the run checks that nothing was written there (nothing downloaded). The rounds alternate which side
goes first.

Printed: one row per set, round and side (accuracy, macro-F1, seconds, epochs), the per-set medians, and per set and
overall the target ``ours median accuracy >= fastai's, at <= 1.1x its median time``. ``--json`` writes the rows.
On 2 CPU cores one round of 30 epochs took 122 s (ours) and 381 s (fastai) on ``digits_mixed``, 65 s and 164 s on
``glyphs``: the default three sets and rounds take over an hour.

``--smoke`` (``tiny``, 1 epoch, 1 round, in a temporary folder) runs the same code end to end and prints the same
table; the test suite runs it. Without fastai's venv the smoke says so in one line and exits 0 (the suite reports it
skipped); a full run stops there instead, with the same line.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from defaults import fit  # noqa: E402
from defaults_sets import SETS, build  # noqa: E402

NAME = Path(__file__).name
DRIVER = Path(__file__).with_name("classification_peer_fastai_driver.py")
DEFAULT_PEER = REPO / ".peers" / "fastai" / "bin" / "python"
SIDES = ("ours", "fastai")


def default_peer() -> str | None:
    """``$FASTAI_PYTHON`` if set (empty: none), else ``.peers/fastai/bin/python`` if it is there."""
    if "FASTAI_PYTHON" in os.environ:
        return os.environ["FASTAI_PYTHON"] or None
    return str(DEFAULT_PEER) if DEFAULT_PEER.exists() else None


def peer_missing(python: str | None) -> str | None:
    """Why ``python`` cannot run the driver, in a few words (``None``: it can)."""
    if not python:
        return "no .peers/fastai/bin/python and no $FASTAI_PYTHON or --peer_python"
    if not Path(python).exists():
        return f"no {python}"
    try:
        done = subprocess.run([python, "-c", "import fastai, torchvision"], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{python} does not run ({type(err).__name__})"
    return f"{python} cannot import fastai" if done.returncode else None


def split_of(root: Path, image_size: str, seed: int) -> tuple[int, list[str]]:
    """Ours' image size for the set (``auto`` resolved as the fit resolves it) and the ``train/`` files ours
    validates on with ``seed`` (relative to ``root``), from the data module's own listing: nothing is decoded."""
    from litstarter.data import ImageFolderDataModule

    size = int(image_size) if image_size != "auto" else "auto"
    data = ImageFolderDataModule(root=str(root), image_size=size, seed=seed, num_workers=0)
    height, width = data.image_size
    if height != width:
        raise SystemExit(f"{NAME}: {root.name} resolves to {height}x{width} px; give --image_size")
    return height, sorted(source.path for source in data.folder.listing().sources["val"])


def truth_of(root: Path) -> dict[str, str]:
    """Every file under ``root/test`` (relative to ``root``) with its class, the folder it sits in."""
    return {p.relative_to(root).as_posix(): p.parent.name for p in sorted((root / "test").rglob("*")) if p.is_file()}


def score(truth: dict[str, str], predicted: dict[str, str]) -> tuple[float, float]:
    """Test accuracy and macro-F1 over every file of ``truth``; a side that left one out fails the run."""
    from sklearn.metrics import accuracy_score, f1_score

    missing = sorted(set(truth) - set(predicted))
    if missing:
        raise SystemExit(f"{NAME}: {len(missing)} test file(s) without a prediction, e.g. {missing[0]}")
    y_true, y_pred = list(truth.values()), [predicted[f] for f in truth]
    return float(accuracy_score(y_true, y_pred)), float(f1_score(y_true, y_pred, average="macro"))


def run_ours(root: Path, work: Path, size: int, epochs: int, seed: int) -> dict:
    """``litstarter fit`` (a fresh cache) then ``litstarter infer`` with its best checkpoint on ``root/test``."""
    extra = [f"--trainer.max_epochs={epochs}", f"--data.image_size={size}", f"--seed_everything={seed}"]
    extra += [f"--data.seed={seed}", f"--data.cache_dir={work / 'cache'}"]
    result = fit(root, work / "runs", root.name, extra, work / "fit.log")
    (best,) = (p for p in Path(result["run"], "checkpoints").glob("*.ckpt") if p.name != "last.ckpt")
    command = [sys.executable, "-m", "litstarter", "infer", "--model", str(best), "--input", str(root / "test")]
    command += ["--output", str(work / "predictions.csv")]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=work, capture_output=True, text=True)
    infer_s = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{NAME}: ours' infer failed ({done.returncode}):\n{done.stderr[-3000:]}")
    with (work / "predictions.csv").open(newline="") as rows:
        predicted = {Path(r["file"]).relative_to(root).as_posix(): r["pred"] for r in csv.DictReader(rows)}
    details = {"fit_s": result["seconds"], "infer_s": infer_s, "fit_test_acc": result["metrics"]["test/acc"]}
    return {"predicted": predicted, "seconds": result["seconds"] + infer_s, "epochs": result["epochs"], **details}


def run_fastai(python: str, root: Path, work: Path, size: int, epochs: int, seed: int, val: list[str], lr: str):
    """The driver in fastai's venv: its predictions, wall seconds and what it printed last."""
    (work / "val.json").write_text(json.dumps(val))
    command = [python, str(DRIVER), str(root), f"--val={work / 'val.json'}", f"--work={work}", f"--size={size}"]
    command += [f"--predictions={work / 'predictions.json'}", f"--epochs={epochs}", f"--seed={seed}", f"--lr={lr}"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, env=os.environ.copy())
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{NAME}: fastai failed ({done.returncode}):\n{done.stderr[-3000:]}")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    predicted = json.loads((work / "predictions.json").read_text())
    return {"predicted": predicted, "seconds": seconds, **summary}


def run_cell(side: str, root: Path, args: argparse.Namespace, seed: int, size: int, val: list[str]) -> dict:
    """One side on one set and seed, in a fresh folder with empty ``TORCH_HOME`` and ``FASTAI_HOME``."""
    with tempfile.TemporaryDirectory(prefix=f"{side}-", dir=args.work) as tmp:
        work, homes = Path(tmp), Path(tmp) / "homes"
        for home in ("torch", "fastai"):
            (homes / home).mkdir(parents=True)
        saved = {key: os.environ.get(key) for key in ("TORCH_HOME", "FASTAI_HOME")}
        os.environ.update(TORCH_HOME=str(homes / "torch"), FASTAI_HOME=str(homes / "fastai"))
        try:
            if side == "ours":
                cell = run_ours(root, work, size, args.epochs, seed)
            else:
                cell = run_fastai(args.peer_python, root, work, size, args.epochs, seed, val, args.peer_lr)
        finally:
            for key, value in saved.items():
                if value is None:
                    del os.environ[key]
                else:
                    os.environ[key] = value
        cell["downloaded"] = sorted(str(p.relative_to(homes)) for p in homes.rglob("*") if p.is_file())
    return cell


def run_set(name: str, args: argparse.Namespace) -> list[dict]:
    """``--rounds`` rounds of both sides on one set (the first side alternating), scored by :func:`score`."""
    root = build(name, args.work / "sets").resolve()
    truth, rows = truth_of(root), []
    for index in range(args.rounds):
        seed = args.seed + index
        size, val = split_of(root, args.image_size, seed)
        for side in SIDES if index % 2 == 0 else reversed(SIDES):
            cell = run_cell(side, root, args, seed, size, val)
            accuracy, f1 = score(truth, cell.pop("predicted"))
            row = {"set": name, "round": index + 1, "seed": seed, "side": side, "size": size, "accuracy": accuracy}
            rows.append({**row, "f1_macro": f1, **cell})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def medians(rows: list[dict]) -> dict[tuple[str, str], dict[str, float]]:
    """(set, side) -> the median accuracy, macro-F1 and seconds over the rounds."""
    cells: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        cells.setdefault((r["set"], r["side"]), []).append(r)
    keys = ("accuracy", "f1_macro", "seconds")
    return {cell: {k: statistics.median(r[k] for r in got) for k in keys} for cell, got in cells.items()}


def report(rows: list[dict], args: argparse.Namespace) -> None:
    """The rows, the per-set medians and the target, per set and overall."""
    print(
        f"\nours vs fastai: {args.epochs} epochs, image_size {args.image_size}, {args.rounds} round(s), seeds from "
        f"{args.seed}; fastai lr {args.peer_lr}; test accuracy and macro-F1 by one scorer"
    )
    head = f"{'set':<13} {'round':>5} {'side':<7} {'accuracy':>8} {'macro-F1':>8} {'seconds':>8} {'epochs':>6}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['set']:<13} {r['round']:>5} {r['side']:<7} {r['accuracy']:>8.3f} {r['f1_macro']:>8.3f}"
            f" {r['seconds']:>8.1f} {r['epochs'] or 0:>6}"
        )
    table = medians(rows)
    print(f"\n{'set':<13} {'side':<7} {'median acc':>10} {'median F1':>9} {'median s':>8}")
    met = []
    for name in dict.fromkeys(r["set"] for r in rows):
        for side in SIDES:
            m = table[name, side]
            print(f"{name:<13} {side:<7} {m['accuracy']:>10.3f} {m['f1_macro']:>9.3f} {m['seconds']:>8.1f}")
        ours, peer = table[name, "ours"], table[name, "fastai"]
        ratio = ours["seconds"] / peer["seconds"]
        met.append(ours["accuracy"] >= peer["accuracy"] and ratio <= 1.1)
        print(
            f"{name:<13} target: accuracy {ours['accuracy']:.3f} vs {peer['accuracy']:.3f}, time {ratio:.2f}x: "
            f"{'met' if met[-1] else 'NOT met'}"
        )
    agree = max(abs(r["accuracy"] - r["fit_test_acc"]) for r in rows if r["side"] == "ours")
    print(f"ours: infer's predictions against the fit's own test/acc: largest difference {agree:.3f}")
    downloaded = sorted({f for r in rows for f in r["downloaded"]})
    print(f"written to TORCH_HOME / FASTAI_HOME (downloads): {', '.join(downloaded) if downloaded else 'nothing'}")
    print(f"ours median >= peer median, at <= 1.1x its time: {'met' if all(met) else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--sets", default="digits_mixed,textures,glyphs", help=f"comma-separated, from {', '.join(SETS)}"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=30, help="both sides (ours may stop early, as its defaults do)")
    parser.add_argument("--image_size", default="auto", help="both sides; auto: ours' choice for each set")
    parser.add_argument("--seed", type=int, default=42, help="the first round's seed; each next round's is one more")
    parser.add_argument("--peer_lr", default="default", help="fastai's lr: default (1e-3), find (lr_find), a value")
    parser.add_argument("--peer_python", default=default_peer(), help="fastai venv's python")
    parser.add_argument("--work", type=Path, default=REPO / "runs" / "classification-peer-fastai")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: tiny, 1 epoch, 1 round")
    args = parser.parse_args()
    missing = peer_missing(args.peer_python)
    if missing:
        why = f"fastai is not installed here ({missing}); `make peers` builds it, as this script's docstring says"
        if args.smoke:
            print(f"{NAME}: skipped: {why}")
            return
        sys.exit(f"{NAME}: {why}")
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    unknown = [n for n in names if n not in SETS]
    if unknown:
        sys.exit(f"{NAME}: unknown set(s) {', '.join(unknown)}; choose from {', '.join(SETS)}")
    if args.smoke:
        with tempfile.TemporaryDirectory(prefix="fastai-peer-smoke-") as tmp:
            args.work, args.epochs, args.rounds, names, args.json = Path(tmp), 1, 1, ["tiny"], None
            args.sets = "tiny"
            report(run_set("tiny", args), args)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    rows = [row for name in names for row in run_set(name, args)]
    report(rows, args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
