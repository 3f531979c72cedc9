"""fastai's from-scratch image classifier on an image folder: the peer side of ``classification_peer_fastai.py``.

    .peers/fastai/bin/python benchmarks/classification_peer_fastai_driver.py <set> --val val.json \\
        --predictions preds.json --work DIR [--size 32] [--epochs 30] [--seed 42] [--lr default|find|<float>]

Runs in fastai's venv (``make peers`` builds ``.peers/fastai`` from ``requirements/peers/fastai.txt``) and imports
fastai and the standard library only, never litstarter. ``<set>`` holds ``train/<class>/<image>`` and
``test/<class>/<image>``; ``--val`` is a JSON list of the ``train/`` files (relative to ``<set>``) to validate on:
the files our side carves from ``train/`` with the same seed, so both validate on the same images.

fastai as its docs train an image classifier, without pretrained weights: a ``DataBlock`` (``ImageBlock``,
``CategoryBlock``, ``get_image_files``, ``parent_label``, a ``FuncSplitter`` on the ``--val`` files) with
``item_tfms=Resize(size)`` and ``batch_tfms=[*aug_transforms(), Normalize.from_stats(*imagenet_stats)]`` (the
normalisation ``vision_learner`` adds only for pretrained weights, so it is given here, as fastai's from-scratch
examples do), batch 64 and fastai's default loader workers; ``vision_learner(dls, resnet18, pretrained=False,
metrics=accuracy)``; ``set_seed(seed, reproducible=True)`` first; ``learn.fit_one_cycle(epochs)`` at fastai's
default ``lr_max`` (1e-3), or with ``--lr find`` at ``learn.lr_find()``'s ``valley`` (its time counted), or at a
given value. The model tested is the one the last epoch leaves (fastai keeps no best checkpoint by default).

The test files are predicted by ``learn.get_preds`` on ``learn.dls.test_dl`` (``Resize``'s centre crop, the
normalisation) and written to ``--predictions`` as ``{"test/<class>/<file>": "<predicted class>"}``. Printed last,
one JSON line: ``epochs``, ``lr``, ``valid_acc`` (fastai's, of the last epoch), ``fit_s``, ``predict_s``,
``fastai``, ``torch``. Anything fastai writes (``lr_find``'s temporary weights) goes under ``--work``.

A part of ``benchmarks/classification_peer_fastai.py``, which runs it, not a benchmark: no smoke of its own;
``classification_peer_fastai.py --smoke`` runs it (and skips in one line without fastai's venv).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import fastai
import torch
from fastai.vision.all import (
    CategoryBlock,
    DataBlock,
    FuncSplitter,
    ImageBlock,
    Normalize,
    Resize,
    accuracy,
    aug_transforms,
    get_image_files,
    imagenet_stats,
    parent_label,
    resnet18,
    set_seed,
    vision_learner,
)


def learner(root: Path, val: set[str], size: int, work: Path):
    """fastai's DataBlock over ``root/train`` (validating on ``val``) and a from-scratch resnet18 learner."""
    block = DataBlock(
        blocks=(ImageBlock, CategoryBlock),
        get_items=get_image_files,
        get_y=parent_label,
        splitter=FuncSplitter(lambda path: Path(path).relative_to(root).as_posix() in val),
        item_tfms=Resize(size),
        batch_tfms=[*aug_transforms(), Normalize.from_stats(*imagenet_stats)],
    )
    dls = block.dataloaders(root / "train", bs=64)
    return vision_learner(dls, resnet18, pretrained=False, metrics=accuracy, path=work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="the set: train/<class>/ and test/<class>/")
    parser.add_argument("--val", type=Path, required=True, help="JSON list of the train files to validate on")
    parser.add_argument("--predictions", type=Path, required=True, help="where to write the test predictions")
    parser.add_argument("--work", type=Path, required=True, help="fastai's own files (lr_find's) go here")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--lr", default="default", help="default (fastai's 1e-3), find (lr_find's valley) or a value")
    args = parser.parse_args()
    root = args.root.resolve()
    val = set(json.loads(args.val.read_text()))
    set_seed(args.seed, reproducible=True)
    start = time.perf_counter()
    learn = learner(root, val, args.size, args.work)
    missing = val - {Path(p).relative_to(root).as_posix() for p in learn.dls.valid_ds.items}
    if missing:
        raise SystemExit(f"fastai driver: {len(missing)} --val file(s) not in the validation set, e.g. {min(missing)}")
    with learn.no_bar(), learn.no_logging():
        if args.lr == "default":
            lr = learn.lr  # fastai's defaults.lr (1e-3): what fit_one_cycle takes without an lr_max
            learn.fit_one_cycle(args.epochs)
        else:
            lr = float(learn.lr_find(show_plot=False).valley) if args.lr == "find" else float(args.lr)
            learn.fit_one_cycle(args.epochs, lr_max=lr)
        fit_s = time.perf_counter() - start
        valid_acc = float(learn.validate()[1])
        start = time.perf_counter()
        files = sorted(get_image_files(root / "test"))
        probs, _ = learn.get_preds(dl=learn.dls.test_dl(files))
    vocab = learn.dls.vocab
    classes = [str(vocab[i]) for i in probs.argmax(1).tolist()]
    predicted = {Path(f).relative_to(root).as_posix(): c for f, c in zip(files, classes, strict=True)}
    args.predictions.write_text(json.dumps(predicted, indent=0))
    summary = {
        "epochs": args.epochs,
        "lr": lr,
        "valid_acc": valid_acc,
        "fit_s": fit_s,
        "predict_s": time.perf_counter() - start,
        "fastai": fastai.__version__,
        "torch": torch.__version__,
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
