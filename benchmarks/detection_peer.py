"""Our object detection task against torchvision's detection reference recipe (``references/detection/train.py``):
the same COCO json, network, epochs and schedule, side by side in one run.

    git clone --depth 1 https://github.com/pytorch/vision /work/peer/vision
    .venv/bin/python benchmarks/detection_peer.py --reference_dir /work/peer/vision \\
        [--rounds 3] [--canvases 500] [--epochs 4] [--batch_size 16] [--workers 1] [--smoke]

The reference is not on PyPI: ``--reference_dir`` (or ``$TORCHVISION_CHECKOUT``) is a checkout of pytorch/vision
(BSD-3-Clause), whose commit is printed; its eight ``references/detection`` files are copied into a temporary folder
at run time, never into this repository. It needs the ``detection`` extra (pycocotools) and torchvision >= 0.16 (v2
transforms).

The data: ``--canvases`` digit canvases (``litstarter.data.digit_boxes``: 64x64 grey, 1 to 4 digits at 12-24 px,
10 classes), written once by ``write_canvases`` and ``write_coco`` (70/15/15, COCO category ids 1..10). Ours reads
that folder; the reference reads the same PNGs and json through COCO's layout, made of symlinks: ``train2017`` and
``val2017`` point at the folder (``file_name`` holds ``images/<split>/``), ``instances_train2017.json`` is our
train json and ``instances_val2017.json`` our *test* json, which the reference evaluates after every epoch.

* ours: ``litstarter fit --config configs/default.yaml --config configs/data/image_folder.yaml --config
  configs/task/detection.yaml --data.root <folder>``, the test split scored by the checkpoint best on val
  (``test/map``, ``test/map50`` from ``metrics.json``);
* torchvision: ``benchmarks/detection_peer_torchvision.py`` runs the reference's ``train.py`` with
  ``--model litstarter_fcos``: the same network as ours (the task's ``architecture_of`` given to
  ``build_detector``: FCOS on a feature pyramid over ``small_cnn``, images at their own 64 px, our normalisation
  by the train split's statistics inside, on the first channel of the RGB the reference opens a grey PNG as),
  scored by its last epoch's evaluation (its ``CocoEvaluator``'s bbox figures at full precision: COCO's AP at IoU
  0.50:0.95, area all, 100 detections, and at IoU 0.50).

Shared: ``--epochs``, ``--batch_size``, ``--workers``, the CPU, AdamW (lr 3e-3, weight decay 0.05 on every
parameter), no gradient clipping, deterministic algorithms, a horizontal flip at p=0.5 as the only augmentation
(the reference's ``hflip`` preset with ``--use-v2``; ours ``FastAugmentation`` without crop or colour), warmup
over the reference's ``min(1000, train batches - 1)`` steps, then cosine.

Not shared, as each side has it:

* schedule: the reference warms up from 0.001 x lr (ours from lr / (warmup + 1)) and steps its cosine once an
  epoch (``CosineAnnealingLR(T_max=epochs)``: a staircase whose last epoch trains at
  lr * (1 + cos(pi (epochs - 1) / epochs)) / 2); ours decays every step, to 0;
* steps: the reference drops the last partial train batch (``GroupedBatchSampler``), ours keeps it;
* evaluation: the reference scores the test split after every epoch (batch 1, one thread, pycocotools) and reports
  its last epoch; ours validates on val every epoch (batch ``--batch_size``, faster-coco-eval's COCOeval), then
  tests the best-on-val checkpoint once;
* data: ours decodes the PNGs once into its memory-mapped cache and flips uint8 batches; the reference decodes
  every PNG with PIL each epoch and flips it before converting to float;
* seeds: ours seeds everything (42); the reference has no seed;
* checkpoints and logs: the reference saves ``model_<epoch>.pth`` and ``checkpoint.pth`` every epoch; ours its
  best and ``last.ckpt``, TensorBoard and its callbacks.

Each round runs the two (ours first, then torchvision first, alternating) as fresh processes; the time is the
process's wall time: imports, reading the data, fit and evaluation. Printed: a table per round, the medians, and
the target: ours' mAP >= torchvision's, ours' time <= 1.1x torchvision's. The defaults' three rounds take about
15 minutes on 2 CPU cores; ``--smoke`` (one round of 120 canvases, 1 epoch) about half a minute, the same code end to
end and the same table; the test suite runs it. Without a checkout (no ``--reference_dir`` or
``$TORCHVISION_CHECKOUT``, or one without the reference's files) the smoke says so in one line and exits 0: the suite
reports it skipped and clones nothing; a full run stops there instead.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
PEER = Path(__file__).with_name("detection_peer_torchvision.py")
REFERENCE_FILES = (
    "train.py", "engine.py", "utils.py", "coco_utils.py", "coco_eval.py", "presets.py", "transforms.py",
    "group_by_aspect_ratio.py",
)  # fmt: skip
LR, WEIGHT_DECAY = 3e-3, 0.05  # configs/default.yaml's AdamW, given to both sides
# Ours' default augmentation reduced to the reference's hflip preset: a flip at p=0.5, no crop, no colour.
AUGMENTATION = {
    "class_path": "litstarter.data.augmentation.FastAugmentation",
    "init_args": {"crop_scale": None, "hflip": 0.5, "color_jitter": 0.0},
}


def write_data(folder: Path, canvases: int) -> dict:
    """Our COCO folder ``folder/coco`` and the reference's layout of symlinks to it, ``folder/reference``; returns
    the train split's size and its normalisation (ours: the train split's statistics)."""
    from litstarter._engine.images.stats import channel_stats
    from litstarter.data.digit_boxes import write_canvases, write_coco

    coco, reference = folder / "coco", folder / "reference"
    written = write_canvases(coco, canvases, seed=42)
    write_coco(coco, written)
    annotations = reference / "annotations"
    annotations.mkdir(parents=True)
    for name in ("train2017", "val2017"):
        (reference / name).symlink_to(coco, target_is_directory=True)
    for theirs, ours in (("train", "train"), ("val", "test")):
        (annotations / f"instances_{theirs}2017.json").symlink_to(coco / "annotations" / f"instances_{ours}.json")
    train = np.stack([np.asarray(Image.open(coco / path)) for path, split, _ in written if split == "train"])
    mean, std = channel_stats(train[:, None])  # (N, 1, 64, 64) uint8
    return {"coco": coco, "reference": reference, "train": len(train), "mean": mean, "std": std}


def network_json(data: dict) -> str:
    """Our detection network as the task builds it (its own defaults over ``small_cnn``), with the data's
    normalisation: what the peer's ``--model litstarter_fcos`` builds."""
    from litstarter.data.digit_boxes import CLASS_NAMES, SIDE
    from litstarter.models.network import architecture_of
    from litstarter.tasks.detection import ObjectDetector

    task = ObjectDetector(backbone="small_cnn", num_classes=len(CLASS_NAMES), in_channels=1, image_size=(SIDE, SIDE))
    return json.dumps({"architecture": architecture_of(task.hparams), "mean": data["mean"], "std": data["std"]})


def reference_missing(reference_dir: Path | None) -> str | None:
    """Why ``reference_dir`` is not a pytorch/vision checkout with the reference, in a few words (``None``: it is)."""
    if reference_dir is None:
        return "no --reference_dir or $TORCHVISION_CHECKOUT"
    source = reference_dir / "references" / "detection"
    missing = [name for name in REFERENCE_FILES if not (source / name).is_file()]
    return f"{source} lacks {', '.join(missing)}" if missing else None


def copy_reference(reference_dir: Path, into: Path) -> str:
    """The reference's files from a pytorch/vision checkout into ``into``; returns the checkout's commit."""
    source = reference_dir / "references" / "detection"
    into.mkdir()
    for name in REFERENCE_FILES:
        shutil.copy2(source / name, into / name)
    git = subprocess.run(["git", "-C", str(reference_dir), "rev-parse", "HEAD"], capture_output=True, text=True)
    return git.stdout.strip() or "unknown (not a git checkout)"


def warmup_steps(data: dict, args: argparse.Namespace) -> int:
    """The reference's warmup: ``min(1000, len(data_loader) - 1)`` iterations, its loader dropping the last batch."""
    return max(0, min(1000, data["train"] // args.batch_size - 1))


def our_arguments(data: dict, work: Path, args: argparse.Namespace) -> list[str]:
    """``litstarter fit``'s arguments: the shared settings over the three configs."""
    configs = ("default.yaml", "data/image_folder.yaml", "task/detection.yaml")
    return [
        *(f"--config={CONFIGS / c}" for c in configs),
        f"--data.root={data['coco']}", "--data.image_size=64", "--data.channels=1", f"--data.cache_dir={work}/cache",
        f"--data.batch_size={args.batch_size}", f"--data.num_workers={args.workers}",
        f"--data.augmentation={json.dumps(AUGMENTATION)}",
        f"--model.optimizer.init_args.lr={LR}", f"--model.optimizer.init_args.weight_decay={WEIGHT_DECAY}",
        "--model.no_decay_norm_and_bias=false", "--trainer.gradient_clip_val=null",
        f"--model.lr_scheduler.init_args.warmup_steps={warmup_steps(data, args)}",
        "--model.lr_scheduler.init_args.min_lr_ratio=0",
        f"--trainer.max_epochs={args.epochs}", f"--trainer.logger.init_args.save_dir={work}/runs",
        "--trainer.enable_progress_bar=false", "--seed_everything=42",
    ]  # fmt: skip


def reference_arguments(data: dict, work: Path, args: argparse.Namespace) -> list[str]:
    """``train.py``'s arguments: the shared settings, the rest its defaults."""
    return [
        f"--data-path={data['reference']}", "--dataset=coco", "--model=litstarter_fcos", "--device=cpu",
        f"--batch-size={args.batch_size}", f"--epochs={args.epochs}", f"--workers={args.workers}",
        "--opt=adamw", f"--lr={LR}", f"--weight-decay={WEIGHT_DECAY}", "--lr-scheduler=cosineannealinglr",
        "--data-augmentation=hflip", "--use-v2", "--use-deterministic-algorithms", f"--output-dir={work}/out",
    ]  # fmt: skip


def run(name: str, command: list[str], cwd: Path) -> tuple[str, float]:
    """``command`` in ``cwd``: its stdout and wall seconds; stops the benchmark (the script run) if it fails."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{Path(sys.argv[0]).name}: {name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout, seconds


def run_ours(data: dict, args: argparse.Namespace) -> dict:
    """One ``litstarter fit`` in a fresh process and folder: test mAP, mAP50 and wall seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "litstarter", "fit", *our_arguments(data, Path(tmp), args)]
        _, seconds = run("ours", command, Path(tmp))
        (metrics,) = Path(tmp, "runs").glob("*/version_*/metrics.json")
        scores = json.loads(metrics.read_text())
    return {"map": scores["test/map"], "map50": scores["test/map50"], "seconds": seconds}


def run_reference(data: dict, code: Path, network: str, args: argparse.Namespace) -> dict:
    """The reference's ``train.py`` with our network in a fresh process: its last evaluation's mAP, mAP50 and wall
    seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = [sys.executable, str(PEER), f"--reference={code}", f"--network={network}"]
        stdout, seconds = run("torchvision", [*wrapper, *reference_arguments(data, Path(tmp), args)], Path(tmp))
    result = json.loads(stdout.strip().splitlines()[-1])
    return {"map": result["map"], "map50": result["map50"], "seconds": seconds}


def print_round(index: int, results: dict) -> None:
    first = next(iter(results))
    print(f"\nround {index + 1} ({first} first)\n{'side':<13}{'mAP':>8}{'mAP50':>8}{'seconds':>9}")
    for name, cell in results.items():
        print(f"{name:<13}{cell['map']:8.4f}{cell['map50']:8.4f}{cell['seconds']:9.1f}")
    print(f"time ours / torchvision: {results['ours']['seconds'] / results['torchvision']['seconds']:.2f}x", flush=True)


def report(rounds: list[dict]) -> None:
    def median(name: str, key: str) -> float:
        return statistics.median(r[name][key] for r in rounds)

    print(f"\nmedians over {len(rounds)} round(s)\n{'side':<13}{'mAP':>8}{'mAP50':>8}{'seconds':>9}")
    for name in ("ours", "torchvision"):
        print(f"{name:<13}{median(name, 'map'):8.4f}{median(name, 'map50'):8.4f}{median(name, 'seconds'):9.1f}")
    ratio = statistics.median(r["ours"]["seconds"] / r["torchvision"]["seconds"] for r in rounds)
    map_ok = median("ours", "map") >= median("torchvision", "map")
    print(
        f"target: ours mAP >= torchvision's ({'met' if map_ok else 'MISSED'}), "
        f"time <= 1.1x torchvision's ({'met' if ratio <= 1.1 else 'MISSED'}: {ratio:.2f}x)"
    )


def main() -> None:
    from litstarter._engine.cores import auto_num_workers

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    checkout = os.environ.get("TORCHVISION_CHECKOUT")
    parser.add_argument(
        "--reference_dir", type=Path, default=Path(checkout) if checkout else None, help="a pytorch/vision checkout"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--canvases", type=int, default=500, help="digit canvases generated, split 70/15/15")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--workers", type=int, default=auto_num_workers(), help="loader workers of both sides")
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: 120 canvases, 1 epoch, 1 round")
    args = parser.parse_args()
    if args.smoke:
        args.canvases, args.epochs, args.rounds = 120, 1, 1
    missing = reference_missing(args.reference_dir)
    if missing:
        why = f"torchvision's detection reference is not here ({missing}; this script's docstring clones it)"
        if args.smoke:
            print(f"detection_peer.py: skipped: {why}")
            return
        sys.exit(f"detection_peer.py: {why}")
    if args.canvases < 20:
        sys.exit(f"detection_peer.py: --canvases must be >= 20 (three splits), got {args.canvases}")
    with tempfile.TemporaryDirectory() as tmp:
        commit = copy_reference(args.reference_dir, Path(tmp) / "reference_code")
        data = write_data(Path(tmp), args.canvases)
        network = network_json(data)
        print(
            f"torchvision references/detection at {commit}; {args.canvases} canvases ({data['train']} train), "
            f"{args.epochs} epochs, batch {args.batch_size}, workers {args.workers}, warmup {warmup_steps(data, args)}"
            " steps",
            flush=True,
        )
        sides = {
            "ours": lambda: run_ours(data, args),
            "torchvision": lambda: run_reference(data, Path(tmp) / "reference_code", network, args),
        }
        rounds = []
        for index in range(args.rounds):
            order = list(sides) if index % 2 == 0 else list(reversed(sides))
            rounds.append({name: sides[name]() for name in order})
            print_round(index, rounds[-1])
    report(rounds)


if __name__ == "__main__":
    main()
