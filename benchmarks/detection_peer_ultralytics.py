"""Our object detection task against Ultralytics YOLO (yolo11n), both from random initialisation on the same YOLO
datasets, scored by one scorer on the same test images.

    make peers   # once: Ultralytics' own venv, .peers/ultralytics (requirements/peers/ultralytics.txt)
    .venv/bin/python benchmarks/detection_peer_ultralytics.py [--sets colour,grey,small] [--rounds 3] \\
        [--first_round 1] [--count 1500] [--epochs 30] [--batch_size 64] [--image_size <the set's side>] \\
        [--json rows.json] [--smoke]

Ultralytics is AGPL-3.0: the project never imports it and never depends on it. It lives in a venv of its own,
``.peers/ultralytics`` (or ``--peer_python``, or ``$ULTRALYTICS_PYTHON``), where
``benchmarks/detection_peer_ultralytics_driver.py`` runs it as a separate program; nothing is downloaded.

The data: ``benchmarks/detection_sets.py`` writes each set of ``--sets`` (``colour``: 64 px colour canvases of 1 to
3 digits at 20-36 px; ``grey``: 64 px grey, 1 to 4 at 12-24 px; ``small``: 320 px clutter, 2 to 8 at 10-18 px;
10 classes) as a YOLO dataset (``data.yaml``, ``images/<split>/``, ``labels/<split>/``, 70/15/15), anew in each
round with the round's number as its seed (1, 2, 3). Both sides read that one folder as it is (ours through its
YOLO reader; Ultralytics leaves its ``labels/<split>.cache`` files there).

* ours: ``litstarter fit --config configs/default.yaml --config configs/data/image_folder.yaml --config
  configs/task/detection.yaml --data.root <set>``, with the shared settings below and our defaults otherwise (FCOS
  over ``small_cnn``, AdamW, warmup + cosine, the random resized crop and colour jitter, early stopping, the
  best-on-val checkpoint tested after the fit); then ``litstarter infer`` of that best checkpoint on
  ``images/test`` writes its COCO results (the task's own ``score_threshold`` 0.05, ``max_detections`` 100);
* Ultralytics: ``YOLO("yolo11n.yaml").train(...)`` with the shared settings, ``amp=False, plots=False,
  device="cpu", val=True`` and its recipe as shipped otherwise (optimiser ``auto``, mosaic, HSV, translate, scale,
  horizontal flips at 0.5, ``close_mosaic``); then its best checkpoint's ``predict`` on ``images/test`` with
  ``conf=0.001`` and ``iou=0.7`` (its validator's thresholds) and ``max_det=100``.

Shared: the images, splits and labels, ``--epochs``, ``--batch_size``, the image size (``--image_size``, default the
set's canvas side: our ``data.image_size``, Ultralytics' ``imgsz``, which it rounds up to a multiple of 32), the
CPU, the seed (the round's: ours ``seed_everything`` and ``data.seed``, Ultralytics ``seed``; both deterministic),
and the scorer: pycocotools' ``COCOeval`` (bbox, 100 detections) of each side's results json against one ground
truth this script writes from the test labels (image ids in file order, category id = class index + 1, the same
for both sides' results). Printed: mAP50-95 (COCO's AP at IoU 0.50:0.95) and mAP50.

Not shared, as each side has it: the score threshold of the scored boxes (0.05 against 0.001); the loader workers
(``--workers`` to both, default 0: Ultralytics' trainer takes 0 on a CPU whatever it is given, and ours is faster
so on two cores for detection, though its own default there is one); the channels of a grey set (ours reads it as one,
Ultralytics as three); early stopping (ours: patience 10 on val mAP; Ultralytics: 100); the network, the loss, the
optimiser, the schedule and the augmentation (each its own default); what runs each epoch (ours: val mAP by
faster-coco-eval, two checkpoints, TensorBoard; Ultralytics: its val, ``last.pt`` and ``best.pt``, then a final
val of ``best.pt``).

``--sides ours`` runs our side alone (to try a change of ours against a peer's rows already written by ``--json``).
Each round of a set runs the two sides in turn (ours first in odd rounds, Ultralytics first in even ones), each in
fresh processes. The time is wall seconds from process start to the end of the test inference: ours, the ``fit``
process (imports, the cache build, training, per-epoch validation and its test of the best checkpoint) plus the
``infer`` process (imports, loading the checkpoint, the test images, the CSV and COCO json); Ultralytics, the driver
process (imports, training with its per-epoch and final validation, ``predict`` on the test images, its json).
Writing the data, the ground truth and the scoring are in neither.

Printed: a table per round (set, round, side, mAP50-95, mAP50, seconds), the per-set medians, and per set the
target: ours' median >= Ultralytics' on both metrics, at <= 1.1x its median time. ``--json PATH`` writes every row
(with each side's own figures: our fit's ``test/map``, the driver's train and predict seconds). Rounds run apart
(``--first_round 2 --rounds 2`` writes the sets with seeds 2 and 3) are put together by ``--report a.json b.json``,
which prints the same tables, medians and target lines from the rows and runs nothing.

``--smoke`` runs one round of 40 ``colour`` canvases (64 px), 1 epoch, batch 16: the same code end to end and the
same table, in about 80 s on 2 CPU cores; the test suite runs it. One round of ``--sets colour --count 300
--epochs 3`` took 2 min 18 s; the defaults (three sets, three rounds, 1,500 canvases, 30 epochs) have not been
timed. Without Ultralytics' venv (the Python it
names does not exist) the smoke says so in one line and exits 0: the suite reports it skipped; a full run stops there
instead, exit 1.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from detection_peer import run  # noqa: E402
from detection_sets import KINDS, write  # noqa: E402

CONFIGS = REPO / "configs"
DRIVER = Path(__file__).with_name("detection_peer_ultralytics_driver.py")
DEFAULT_PEER = REPO / ".peers" / "ultralytics" / "bin" / "python"
NAME = Path(__file__).name
PEER = "ultralytics"


def peer_version(python: Path) -> tuple[str | None, str]:
    """``(None, "ultralytics <v> (torch <v>)")`` where ``python`` imports Ultralytics, else ``(why, "")``."""
    if not python.exists():
        return f"{python} does not exist", ""
    probe = "import importlib.metadata as m, torch; print(m.version('ultralytics'), torch.__version__)"
    try:
        done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{python} does not run ({type(err).__name__})", ""
    if done.returncode:
        return f"{python} has no ultralytics", ""
    ultralytics, torch = done.stdout.split()
    return None, f"ultralytics {ultralytics} (torch {torch})"


def write_truth(root: Path) -> tuple[Path, dict[str, int]]:
    """The test split's COCO ground truth, ``root/truth.json``, from the YOLO labels: image ids in file order,
    category id = class index + 1; returns its path and each file name's image id."""
    images, annotations, ids = [], [], {}
    for image_id, path in enumerate(sorted((root / "images" / "test").iterdir())):
        width, height = Image.open(path).size
        ids[path.name] = image_id
        images.append({"id": image_id, "file_name": path.name, "width": width, "height": height})
        for line in (root / "labels" / "test" / f"{path.stem}.txt").read_text().split("\n"):
            if not line.strip():
                continue
            label, cx, cy, w, h = (float(v) for v in line.split())
            box = [(cx - w / 2) * width, (cy - h / 2) * height, w * width, h * height]
            annotation = {"id": len(annotations) + 1, "image_id": image_id, "category_id": int(label) + 1}
            annotations.append({**annotation, "bbox": box, "area": box[2] * box[3], "iscrowd": 0})
    categories = [{"id": c + 1, "name": str(c)} for c in range(10)]
    truth = root / "truth.json"
    truth.write_text(json.dumps({"images": images, "annotations": annotations, "categories": categories}))
    return truth, ids


def score(truth: Path, ids: dict[str, int], results: Path) -> tuple[float, float]:
    """pycocotools' bbox mAP50-95 and mAP50 (100 detections) of a results json whose rows name their file
    (``file_name``: a path or a name), given the ground truth's image ids by file name."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    rows = json.loads(results.read_text())
    for row in rows:
        row["image_id"] = ids[Path(row["file_name"]).name]
    if not rows:
        return 0.0, 0.0
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(truth))
        evaluation = COCOeval(gt, gt.loadRes(rows), "bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return float(evaluation.stats[0]), float(evaluation.stats[1])


def our_fit(root: Path, work: Path, args: argparse.Namespace, size: int, seed: int) -> list[str]:
    """``litstarter fit``'s command: the three configs and the shared settings."""
    configs = ("default.yaml", "data/image_folder.yaml", "task/detection.yaml")
    shared = {
        "data.root": root,
        "data.image_size": size,
        "data.batch_size": args.batch_size,
        "data.num_workers": args.workers,
        "data.cache_dir": work / "cache",
        "data.seed": seed,
        "trainer.max_epochs": args.epochs,
        "trainer.logger.init_args.save_dir": work / "runs",
        "trainer.enable_progress_bar": "false",
        "seed_everything": seed,
    }
    command = [sys.executable, "-m", "litstarter", "fit", *(f"--config={CONFIGS / c}" for c in configs)]
    return [*command, *(f"--{key}={value}" for key, value in shared.items()), *shlex.split(args.ours_options)]


def run_ours(root: Path, work: Path, args: argparse.Namespace, size: int, seed: int) -> dict:
    """Our fit, then ``infer`` of its best checkpoint on the test images: the results json and the seconds."""
    work.mkdir()
    _, fit_s = run("ours (fit)", our_fit(root, work, args, size, seed), work)
    (run_dir,) = (work / "runs").glob("*/version_*")
    (best,) = (run_dir / "checkpoints").glob("epoch=*.ckpt")
    own = json.loads((run_dir / "metrics.json").read_text())
    output = work / "ours.csv"
    infer = [sys.executable, "-m", "litstarter", "infer", f"--model={best}", f"--input={root / 'images' / 'test'}"]
    _, infer_s = run("ours (infer)", [*infer, f"--output={output}", f"--batch_size={args.batch_size}"], work)
    detail = {"fit_s": fit_s, "infer_s": infer_s, "own_test_map": own["test/map"], "own_test_map50": own["test/map50"]}
    return {"results": output.with_suffix(".coco.json"), "seconds": fit_s + infer_s, "detail": detail}


def run_peer(root: Path, work: Path, args: argparse.Namespace, size: int, seed: int) -> dict:
    """The driver in Ultralytics' venv: the results json and the process's seconds."""
    work.mkdir()
    shared = {"epochs": args.epochs, "imgsz": size, "batch": args.batch_size, "workers": args.workers, "seed": seed}
    command = [str(args.peer_python), str(DRIVER), str(root / "data.yaml"), str(work)]
    command += [f"--{key}={value}" for key, value in shared.items()]
    stdout, seconds = run(PEER, command, work)
    said = json.loads(stdout.strip().splitlines()[-1])
    detail = {"train_s": said["train_s"], "predict_s": said["predict_s"], "boxes": said["boxes"]}
    return {"results": Path(said["results"]), "seconds": seconds, "detail": detail}


HEADER = f"{'set':<8}{'round':>5}  {'side':<12}{'mAP50-95':>9}{'mAP50':>8}{'seconds':>9}"


def row_line(row: dict, label: str) -> str:
    """One table row: ``row``'s set, ``label`` in the round's column, its side and figures."""
    return f"{row['set']:<8}{label:>5}  {row['side']:<12}{row['map']:9.4f}{row['map50']:8.4f}{row['seconds']:9.1f}"


def run_round(kind: str, number: int, args: argparse.Namespace) -> list[dict]:
    """One round of one set in a temporary folder: the set written with seed ``number``, both sides, their scores;
    prints its table."""
    size = args.image_size or KINDS[kind]["side"]
    sides = {side: run for side, run in (("ours", run_ours), (PEER, run_peer)) if side in args.sides}
    order = list(sides) if number % 2 else list(reversed(sides))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = write(kind, Path(tmp) / "set", args.count, seed=number)
        truth, ids = write_truth(root)
        for side in order:
            done = sides[side](root, Path(tmp) / side, args, size, number)
            map_, map50 = score(truth, ids, done["results"])
            row = {"set": kind, "round": number, "seed": number, "side": side, "image_size": size}
            rows.append({**row, "first": side == order[0], "map": map_, "map50": map50, "seconds": done["seconds"]})
            rows[-1].update(done["detail"])
    print(f"\n{HEADER}")
    for row in sorted(rows, key=lambda r: r["side"] != "ours"):
        print(row_line(row, str(number)))
    return rows


def report(rows: list[dict], kinds: list[str], sides: list[str]) -> None:
    """The per-set medians and each set's target line (with both sides)."""
    medians = {}
    for kind in kinds:
        for side in sides:
            mine = [r for r in rows if r["set"] == kind and r["side"] == side]
            medians[kind, side] = {key: statistics.median(r[key] for r in mine) for key in ("map", "map50", "seconds")}
    rounds = len({r["round"] for r in rows})
    print(f"\nmedians over {rounds} round(s)\n{HEADER}")
    for kind in kinds:
        for side in sides:
            print(row_line({"set": kind, "side": side, **medians[kind, side]}, "-"))
    if len(sides) < 2:
        print(f"one side run ({sides[0]}): no target line")
        return
    for kind in kinds:
        ours, peer = medians[kind, "ours"], medians[kind, PEER]
        ratio = ours["seconds"] / peer["seconds"]
        met = ours["map"] >= peer["map"] and ours["map50"] >= peer["map50"] and ratio <= 1.1
        print(
            f"{kind}: ours median >= peer median on both metrics, at <= 1.1x its time: {'met' if met else 'NOT met'}"
            f" (mAP50-95 {ours['map']:.4f} vs {peer['map']:.4f}, mAP50 {ours['map50']:.4f} vs {peer['map50']:.4f},"
            f" time {ratio:.2f}x)"
        )


def parse() -> argparse.Namespace:
    """The arguments; ``--smoke`` sets its own sizes."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    python = os.environ.get("ULTRALYTICS_PYTHON") or DEFAULT_PEER
    parser.add_argument("--peer_python", type=Path, default=Path(python), help="Ultralytics' venv's python")
    parser.add_argument("--sets", default="colour,grey,small", help=f"of {', '.join(KINDS)}, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per set; round n writes its set with seed n")
    parser.add_argument("--first_round", type=int, default=1, help="the first round's number (to run rounds apart)")
    parser.add_argument("--count", type=int, default=1500, help="canvases per set, split 70/15/15")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--image_size", type=int, default=None, help="both sides' image size; default the set's side")
    parser.add_argument(
        "--workers", type=int, default=0, help="loader workers for both (Ultralytics' trainer takes 0 on a CPU anyway)"
    )
    parser.add_argument(
        "--sides", default=f"ours,{PEER}", help="the sides to run, comma-separated (one: to try a change of ours)"
    )
    parser.add_argument(
        "--ours_options", default="", help="more options for our fit, to try a change ('--model.fpn_channels 32')"
    )
    parser.add_argument("--json", type=Path, default=None, help="write every row here")
    parser.add_argument(
        "--report", type=Path, nargs="+", help="print the tables and medians of rows --json wrote (runs nothing)"
    )
    parser.add_argument("--smoke", action="store_true", help="one round of 40 colour canvases, 1 epoch, batch 16")
    args = parser.parse_args()
    args.sides = [side for side in ("ours", PEER) if side in args.sides.split(",")]
    if args.smoke:
        args.sets, args.rounds, args.count, args.epochs, args.batch_size = "colour", 1, 40, 1, 16
    return args


def print_report(paths: list[Path]) -> None:
    """The tables, medians and target lines of the rows in ``paths`` (runs written apart, as by ``--first_round``)."""
    rows = [row for path in paths for row in json.loads(path.read_text())]
    kinds = list(dict.fromkeys(row["set"] for row in rows))
    for number, kind in sorted(
        {(row["round"], row["set"]) for row in rows}, key=lambda key: (key[0], kinds.index(key[1]))
    ):
        print(f"\n{HEADER}")
        for row in sorted(
            (r for r in rows if (r["round"], r["set"]) == (number, kind)), key=lambda r: r["side"] != "ours"
        ):
            print(row_line(row, str(number)))
    report(rows, kinds, [side for side in ("ours", PEER) if any(row["side"] == side for row in rows)])


def main() -> None:
    args = parse()
    if args.report:
        print_report(args.report)
        return
    kinds = [kind for kind in args.sets.split(",") if kind]
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown or not kinds or args.count < 20 or min(args.rounds, args.first_round) < 1 or not args.sides:
        sys.exit(
            f"{NAME}: --sets takes {', '.join(KINDS)}, --sides ours and/or {PEER}, --count >= 20, --rounds and"
            f" --first_round >= 1; got --sets {args.sets!r}"
        )
    missing, version = peer_version(args.peer_python)
    if missing:
        why = f"Ultralytics' venv is not here ({missing}): build it with `make peers` (this script's docstring)"
        if args.smoke:
            print(f"{NAME}: skipped: {why}")
            return
        sys.exit(f"{NAME}: {why}")
    size = f"{args.image_size} px" if args.image_size else "the set's side"
    print(
        f"{version} at {args.peer_python}; sets {', '.join(kinds)}, {args.rounds} round(s), {args.count} canvases, "
        f"{args.epochs} epochs, batch {args.batch_size}, image size {size}, workers {args.workers}",
        flush=True,
    )
    rows = []
    for number in range(args.first_round, args.first_round + args.rounds):
        for kind in kinds:
            rows += run_round(kind, number, args)
            sys.stdout.flush()
    report(rows, kinds, args.sides)
    if args.json:
        settings = {"count": args.count, "epochs": args.epochs, "batch_size": args.batch_size, "peer": version}
        args.json.write_text(json.dumps([{**row, **settings} for row in rows], indent=1) + "\n")


if __name__ == "__main__":
    main()
