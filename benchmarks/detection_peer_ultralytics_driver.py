"""Ultralytics YOLO trained from scratch on a YOLO dataset, then run on its test images: the peer side of
``detection_peer_ultralytics.py``.

    .peers/ultralytics/bin/python benchmarks/detection_peer_ultralytics_driver.py <set>/data.yaml <work> \\
        --epochs 30 --imgsz 64 --batch 64 --seed 1 [--workers 8]

Runs in Ultralytics' own venv (``.peers/ultralytics``, built by ``make peers``) and imports ultralytics (and the
matplotlib it depends on) only, never litstarter. Ultralytics is AGPL-3.0: the project never imports it and never
depends on it; this file is run as a separate program, in that venv's Python, by the benchmark.

Offline: ``YOLO_OFFLINE=true`` and ``YOLO_AUTOINSTALL=false`` are set, and ``YOLO_CONFIG_DIR`` is ``<work>/config``,
before ultralytics is imported; its dataset check wants ``Arial.ttf`` there, so matplotlib's DejaVuSans.ttf (in
this venv) is copied in under that name, and nothing is fetched.

The recipe is Ultralytics' own, as shipped: ``YOLO("yolo11n.yaml")`` (random initialisation) trained by
``model.train(data=..., epochs=, imgsz=, batch=, amp=False, plots=False, device="cpu", workers=, seed=,
project=<work>/runs, val=True)``, every other argument its default (its optimiser ``auto``, warmup, mosaic, HSV,
translate, scale, flips, ``close_mosaic`` ...). Its trainer sets the loader workers to 0 on CPU, whatever
``workers`` says. Then the best checkpoint (``trainer.best``, chosen on its val fitness) predicts every image of the
test folder beside the train one (``images/test``) at ``imgsz``, with ``conf=0.001``, ``iou=0.7`` (its validator's
thresholds) and ``max_det=100`` (COCO's limit); the boxes, in each file's own pixels, go to
``<work>/ultralytics.coco.json`` as COCO results rows: ``file_name``, ``category_id`` (class index + 1), ``bbox``
``[x, y, w, h]``, ``score``. The benchmark gives them their image ids and scores them.

Printed last, one JSON line: ``version``, ``torch``, ``train_s``, ``predict_s``, ``best``, ``results``, ``boxes``.

A part of ``benchmarks/detection_peer_ultralytics.py``, which runs it, not a benchmark: no smoke of its own;
``detection_peer_ultralytics.py --smoke`` runs it (and skips in one line without Ultralytics' venv).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path


def offline(config_dir: Path) -> None:
    """Ultralytics' environment for a machine without the internet, set before it is imported."""
    import matplotlib

    config_dir.mkdir(parents=True, exist_ok=True)
    font = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    shutil.copyfile(font, config_dir / "Arial.ttf")
    os.environ.update(YOLO_OFFLINE="true", YOLO_AUTOINSTALL="false", YOLO_CONFIG_DIR=str(config_dir))


def predict(best: Path, folder: Path, args: argparse.Namespace) -> list[dict]:
    """The best checkpoint's boxes on every image in ``folder``, as COCO results rows keyed by file name."""
    from ultralytics import YOLO

    found = YOLO(str(best)).predict(
        source=str(folder),
        stream=True,
        imgsz=args.imgsz,
        batch=args.batch,
        conf=0.001,
        iou=0.7,
        max_det=100,
        device="cpu",
        verbose=False,
    )
    rows = []
    for result in found:
        boxes = result.boxes
        for (x1, y1, x2, y2), score, label in zip(
            boxes.xyxy.tolist(), boxes.conf.tolist(), boxes.cls.tolist(), strict=True
        ):
            bbox = [round(v, 3) for v in (x1, y1, x2 - x1, y2 - y1)]
            rows.append({"file_name": Path(result.path).name, "category_id": int(label) + 1, "bbox": bbox})
            rows[-1]["score"] = round(score, 6)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the set's data.yaml")
    parser.add_argument("work", type=Path, help="a folder of its own: config, runs, the results json")
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--imgsz", type=int, required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--workers", type=int, default=8, help="its own default (its trainer takes 0 on the CPU)")
    parser.add_argument("--seed", type=int, required=True)
    args = parser.parse_args()
    offline(args.work / "config")

    import torch
    import ultralytics
    from ultralytics import YOLO

    model = YOLO("yolo11n.yaml")
    start = time.perf_counter()
    model.train(
        data=str(args.data),
        epochs=args.epochs,
        imgsz=args.imgsz,
        batch=args.batch,
        amp=False,
        plots=False,
        device="cpu",
        workers=args.workers,
        seed=args.seed,
        project=str(args.work / "runs"),
        val=True,
    )
    train_s = time.perf_counter() - start
    best = Path(model.trainer.best)
    start = time.perf_counter()
    rows = predict(best, args.data.parent / "images" / "test", args)
    predict_s = time.perf_counter() - start
    results = args.work / "ultralytics.coco.json"
    results.write_text(json.dumps(rows))
    said = {"version": ultralytics.__version__, "torch": torch.__version__, "train_s": train_s}
    said.update(predict_s=predict_s, best=str(best), results=str(results), boxes=len(rows))
    print(json.dumps(said), flush=True)


if __name__ == "__main__":
    main()
