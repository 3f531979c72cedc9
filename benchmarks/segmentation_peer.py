"""Our semantic segmentation task against torchgeo's ``SemanticSegmentationTask``: same split, encoder, epochs and
optimiser, side by side in one run.

    python3 -m venv /work/peer/torchgeo-venv && /work/peer/torchgeo-venv/bin/pip install torchgeo==0.8.1 requests
    .venv/bin/python benchmarks/segmentation_peer.py --peer_python /work/peer/torchgeo-venv/bin/python \\
        [--rounds 3] [--canvases 3000] [--epochs 8] [--seed 42] [--schedule torchgeo] [--defaults] [--smoke]

torchgeo lives in a venv of its own (``--peer_python``, or ``$TORCHGEO_PYTHON``), never in the project's
dependencies; 0.8.1 imports ``requests`` without declaring it, hence the second package. Ours needs the ``smp``
extra (``pip install -e '.[smp]'``, in ``dev``).

The data: ``--canvases`` digit canvases (``litstarter.data.digit_segmentation.digit_masks``: 48x48 grey, 1 to 4
digits, 11 classes with the background), split 70/15/15 as ``DigitSegmentationDataModule`` splits them, written
once as ``{train,val,test}/{images,masks}/<i>.png`` with ``classes.txt``: both sides read these files and splits.

* ours: ``litstarter fit`` with ``configs/default.yaml``, ``configs/data/image_folder.yaml``,
  ``configs/task/segmentation.yaml`` and ``configs/optim/plateau.yaml``, set to torchgeo's defaults:
  ``model.backbone smp/unet/resnet18`` (random init), AdamW lr 1e-3 with weight decay 0.01 on every parameter,
  ``ReduceLROnPlateau`` (factor 0.1, patience 10, on the val loss), no gradient clipping, no augmentation, the
  images as they are (48 px, ``crop_pct 1``); the rest (callbacks, logging, the best checkpoint by val mIoU tested
  after the fit) are our defaults, the loss among them:
  cross-entropy plus the task's ``dice_weight`` x Dice (``--dice_weight 0``: cross-entropy alone, as torchgeo's);
  ``--schedule ours`` keeps the optimiser but gives ours its own schedule and clipping (warmup + cosine, gradient
  norm clipped at 1.0) in place of torchgeo's;
* torchgeo: ``benchmarks/segmentation_peer_torchgeo.py`` in its venv: ``SemanticSegmentationTask(model="unet",
  backbone="resnet18", weights=None, loss="ce", lr=1e-3)`` (its own AdamW and ``ReduceLROnPlateau(patience=10)``),
  torchgeo's ``NonGeoDataModule`` over the same files, normalised as ours by the train split's statistics, the
  checkpoint with the best val macro mIoU tested.

Both: ``--epochs`` epochs, batch 32, the same loader workers, ``deterministic``, and the same seed within a round:
``--seed`` in the first round, one more in each next one (both sides are deterministic, so rounds on one seed would
repeat one score; these measure the spread over initialisations and shuffles). Left as each side has
them: torchgeo drops the last partial train batch (65 steps an epoch at 3,000 canvases, ours 66), scores its train
metrics every step and keeps its best checkpoint only; ours also writes ``last.ckpt`` after every epoch (two
checkpoints of about 170 MB, the optimiser's state included) and runs its callbacks (TensorBoard, overlays).

Each round runs the two (ours first, then torchgeo first, alternating), each as a fresh process (ours with a fresh
cache); the time is the process's wall time: imports, reading the files (ours: building its cache), fit and test.
The mIoU is the test split's macro mean IoU over the classes present (ours ``test/miou``; torchgeo's own metric is
micro, printed beside it). ``--defaults`` adds a third contender per round: ours with the task's own defaults
(small_cnn U-Net, cross-entropy + Dice, AdamW 3e-3, warmup + cosine, clipping), on the same data and epochs.

Printed per round: each side's test mIoU and seconds and ours / torchgeo's time; then the medians.
Target: ours' mIoU >= torchgeo's, ours' time <= 1.1x torchgeo's.

``--smoke`` (one round of 150 canvases, 1 epoch) runs the same code end to end and prints the same table; the test
suite runs it. Without torchgeo's venv (no ``--peer_python`` or ``$TORCHGEO_PYTHON``, or one that cannot import
torchgeo) the smoke says so in one line and exits 0: the suite reports it skipped and downloads nothing; a full run
stops there instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
PEER = Path(__file__).with_name("segmentation_peer_torchgeo.py")
SPLITS = {"train": (0.0, 0.7), "val": (0.7, 0.85), "test": (0.85, 1.0)}  # DigitSegmentationDataModule's


def write_mask_folder(root: Path, canvases: int, seed: int = 42) -> None:
    """The digit canvases as ``root/<split>/images/<i>.png`` (grey) and ``root/<split>/masks/<i>.png`` (class
    indices), split 70/15/15 in generation order, and ``root/classes.txt``."""
    from litstarter.data.digit_segmentation import CLASS_NAMES, digit_masks

    images, masks = digit_masks(canvases, seed)  # (N, 1, 48, 48), (N, 48, 48) uint8
    for split, (start, stop) in SPLITS.items():
        (root / split / "images").mkdir(parents=True)
        (root / split / "masks").mkdir()
        for i in range(int(start * canvases), int(stop * canvases)):
            Image.fromarray(images[i, 0]).save(root / split / "images" / f"{i:05d}.png")
            Image.fromarray(masks[i]).save(root / split / "masks" / f"{i:05d}.png")
    (root / "classes.txt").write_text("\n".join(CLASS_NAMES) + "\n")


def our_arguments(root: Path, work: Path, args: argparse.Namespace, matched: bool, seed: int) -> list[str]:
    """``litstarter fit``'s arguments: torchgeo's settings (``matched``) or the task's own defaults."""
    configs = ["default.yaml", "data/image_folder.yaml", "task/segmentation.yaml"]
    common = [
        f"--data.root={root}",
        "--data.image_size=48",
        "--data.crop_pct=1.0",
        "--data.augmentation=null",
        f"--data.batch_size={args.batch_size}",
        f"--data.num_workers={args.workers}",
        f"--data.cache_dir={work}/cache",
        f"--trainer.max_epochs={args.epochs}",
        f"--trainer.logger.init_args.save_dir={work}/runs",
        "--trainer.enable_progress_bar=false",
        f"--seed_everything={seed}",
    ]
    if not matched:
        return [*(f"--config={CONFIGS / c}" for c in configs), *common]
    torchgeo = [
        "--model.backbone=smp/unet/resnet18",
        "--model.weights=null",
        "--model.optimizer.init_args.lr=0.001",
        "--model.optimizer.init_args.weight_decay=0.01",
        "--model.no_decay_norm_and_bias=false",
    ]
    if args.schedule == "torchgeo":  # its ReduceLROnPlateau, which 8 epochs never trigger, and no clipping
        configs.append("optim/plateau.yaml")
        torchgeo += [
            "--model.lr_scheduler.init_args.factor=0.1",
            "--model.lr_scheduler.init_args.patience=10",
            "--model.lr_scheduler.init_args.min_lr=0",
            "--trainer.gradient_clip_val=null",
        ]
    if args.dice_weight is not None:
        torchgeo.append(f"--model.dice_weight={args.dice_weight}")
    return [*(f"--config={CONFIGS / c}" for c in configs), *common, *torchgeo]


def run_ours(root: Path, args: argparse.Namespace, matched: bool, seed: int) -> dict:
    """One ``litstarter fit`` in a fresh process and folder: test mIoU and wall seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "litstarter", "fit", *our_arguments(root, Path(tmp), args, matched, seed)]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode:
            sys.exit(f"segmentation_peer.py: ours failed ({done.returncode}):\n{done.stderr[-3000:]}")
        (metrics,) = Path(tmp, "runs").glob("*/version_*/metrics.json")
        scores = json.loads(metrics.read_text())
    return {"miou": scores["test/miou"], "seconds": seconds}


def run_peer(root: Path, args: argparse.Namespace, seed: int) -> dict:
    """``segmentation_peer_torchgeo.py`` in torchgeo's venv: test macro mIoU, micro IoU and wall seconds."""
    command = [
        args.peer_python,
        str(PEER),
        str(root),
        f"--epochs={args.epochs}",
        f"--batch_size={args.batch_size}",
        f"--workers={args.workers}",
        f"--seed={seed}",
    ]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"segmentation_peer.py: torchgeo failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"miou": result["test_miou_macro"], "micro": result["test_iou_micro"], "seconds": seconds}


def peer_missing(python: str | None) -> str | None:
    """Why ``python`` cannot run the peer, in a few words (``None``: it can)."""
    if not python:
        return "no --peer_python or $TORCHGEO_PYTHON"
    try:
        done = subprocess.run([python, "-c", "import torchgeo, kornia"], capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{python} does not run ({type(err).__name__})"
    return f"{python} cannot import torchgeo and kornia" if done.returncode else None


def run_rounds(root: Path, args: argparse.Namespace) -> list[dict]:
    """``--rounds`` rounds of ours and torchgeo (and ours with defaults), the order alternating by round."""
    contenders = {
        "ours": lambda seed: run_ours(root, args, True, seed),
        "torchgeo": lambda seed: run_peer(root, args, seed),
    }
    if args.defaults:
        contenders["ours_defaults"] = lambda seed: run_ours(root, args, False, seed)
    rounds = []
    for index in range(args.rounds):
        order = list(contenders) if index % 2 == 0 else list(reversed(contenders))
        results = {}
        seed = args.seed + index
        for name in order:
            cell = results[name] = contenders[name](seed)
            score = f"mIoU {cell['miou']:.4f} {cell['seconds']:7.1f} s"
            print(f"round {index + 1} (seed {seed}) {name:<14} {score}", flush=True)
        rounds.append(results)
    return rounds


def report(rounds: list[dict], args: argparse.Namespace) -> None:
    print(f"\n{args.canvases} canvases, {args.epochs} epochs, batch {args.batch_size}, workers {args.workers}")
    defaults = "ours_defaults" in rounds[0]
    head = f"{'round':<7}{'ours mIoU':>10}{'ours s':>9}{'tg mIoU':>9}{'tg micro':>10}{'tg s':>8}{'ours/tg s':>11}"
    print(head + (f"{'defaults mIoU':>15}{'defaults s':>12}" if defaults else ""))
    for index, r in enumerate(rounds, start=1):
        ours, peer = r["ours"], r["torchgeo"]
        line = f"{index:<7}{ours['miou']:10.4f}{ours['seconds']:9.1f}{peer['miou']:9.4f}{peer['micro']:10.4f}"
        line += f"{peer['seconds']:8.1f}{ours['seconds'] / peer['seconds']:11.2f}"
        if defaults:
            line += f"{r['ours_defaults']['miou']:15.4f}{r['ours_defaults']['seconds']:12.1f}"
        print(line)

    def median(name: str, key: str) -> float:
        return statistics.median(r[name][key] for r in rounds)

    ratio = statistics.median(r["ours"]["seconds"] / r["torchgeo"]["seconds"] for r in rounds)
    line = f"{'median':<7}{median('ours', 'miou'):10.4f}{median('ours', 'seconds'):9.1f}"
    line += f"{median('torchgeo', 'miou'):9.4f}{median('torchgeo', 'micro'):10.4f}{median('torchgeo', 'seconds'):8.1f}"
    line += f"{ratio:11.2f}"
    if defaults:
        line += f"{median('ours_defaults', 'miou'):15.4f}{median('ours_defaults', 'seconds'):12.1f}"
    print(line)
    miou_ok = median("ours", "miou") >= median("torchgeo", "miou")
    print(
        f"target: ours mIoU >= torchgeo's ({'met' if miou_ok else 'MISSED'}), "
        f"time <= 1.1x torchgeo's ({'met' if ratio <= 1.1 else 'MISSED'}: {ratio:.2f}x)"
    )


def main() -> None:
    from litstarter._engine.cores import auto_num_workers

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer_python", default=os.environ.get("TORCHGEO_PYTHON"), help="torchgeo venv's python")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--canvases", type=int, default=3000, help="digit canvases generated, split 70/15/15")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=42, help="the first round's seed; each next round's is one more")
    parser.add_argument("--workers", type=int, default=auto_num_workers(), help="loader workers of both sides")
    parser.add_argument(
        "--dice_weight", type=float, default=None, help="ours' Dice weight (default: the task's; 0: torchgeo's loss)"
    )
    parser.add_argument(
        "--schedule",
        choices=("torchgeo", "ours"),
        default="torchgeo",
        help="ours' lr schedule and clipping: torchgeo's (ReduceLROnPlateau, none) or ours (warmup + cosine, 1.0)",
    )
    parser.add_argument("--defaults", action="store_true", help="also ours with the task's own defaults")
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: 150 canvases, 1 epoch, 1 round")
    args = parser.parse_args()
    if args.smoke:
        args.canvases, args.epochs, args.rounds = 150, 1, 1
    missing = peer_missing(args.peer_python)
    if missing:
        why = f"torchgeo is not installed here ({missing}; this script's docstring makes its venv)"
        if args.smoke:
            print(f"segmentation_peer.py: skipped: {why}")
            return
        sys.exit(f"segmentation_peer.py: {why}")
    if args.canvases < 20:
        sys.exit(f"segmentation_peer.py: --canvases must be >= 20 (three splits), got {args.canvases}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "canvases"
        start = time.perf_counter()
        write_mask_folder(root, args.canvases)
        print(f"wrote {args.canvases} canvases and masks in {time.perf_counter() - start:.1f} s", flush=True)
        rounds = run_rounds(root, args)
    report(rounds, args)


if __name__ == "__main__":
    main()
