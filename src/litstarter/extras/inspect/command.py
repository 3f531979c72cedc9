"""``litstarter inspect``: what is in an image folder, before any training, from the image cache.

    litstarter inspect --config configs/data/image_folder.yaml --data.root <folder> [--json]

It takes ``fit``'s ``--config`` stack and options (parsed by the CLI's own parser; only ``data`` and
``model.class_weights`` are read), lists and splits the folder exactly as ``fit`` does, and reads everything else
from the cache manifest: per file, the original size and mode and a content hash, recorded when the cache was built
(it builds the cache if missing, as ``fit`` would, leaving bad files out so that it can list them). Nothing is
decoded twice and there is no second copy.

It reports the layout, images per class and split, the train split's imbalance ratio, image sizes (the smallest,
median and largest image) and modes, every bad file, every image found in more than one split (byte-identical
files, and near-duplicates by perceptual hash: a test score over them is not held-out), the quality checks of
:mod:`.quality` (each naming its files), and the settings that follow from those figures. What ``fit`` would
refuse (a single class) is warned about on stderr; the report is still made and the exit status is 0.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter

import numpy as np

from litstarter._engine.images.cache import ImageCache
from litstarter._engine.images.channels import GREY_MODES
from litstarter._engine.images.folder import CachedImageFolder
from litstarter._engine.images.leakage import NEAR_DISTANCE, describe, find_leaks, find_near_leaks
from litstarter._engine.images.listing import shown
from litstarter._engine.images.sizes import auto_side
from litstarter._engine.images.splits import Listing
from litstarter._engine.run.logs import show_litstarter_logs
from litstarter._engine.targets import target_kind
from litstarter.baseline import fit_linear_baseline
from litstarter.extras.inspect.fit_config import image_folder_of, loader_setting, parse_fit_config
from litstarter.extras.inspect.label_sets import pos_weight_suggestion
from litstarter.extras.inspect.quality import quality_report

#: Above this train imbalance (largest class / smallest) a sampler or loss weights are suggested.
IMBALANCE_LIMIT = 3.0
#: The table names this many files per quality check (a folder of 3,000 dark scans would list them all).
NAMED_FILES = 5


def _spread(values: list[int]) -> dict:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)} if values else {}


def size_extremes(cache: ImageCache) -> dict:
    """The smallest, median and largest image by pixel count, each a real image: ``{"smallest": {"width",
    "height", "path"}, ...}`` (not per-axis extremes, which can combine into a size no image has)."""
    images = [
        (w * h, w, h, path)
        for split in cache.splits
        for w, h, path in zip(*(cache.column(split, key) for key in ("width", "height", "path")), strict=True)
    ]
    if not images:
        return {}
    images.sort(key=lambda image: image[0])  # stable: ties keep split and file order
    pick = {"smallest": images[0], "median": images[(len(images) - 1) // 2], "largest": images[-1]}
    return {name: {"width": w, "height": h, "path": path} for name, (_, w, h, path) in pick.items()}


def summarize(folder: CachedImageFolder, listing: Listing, cache: ImageCache) -> dict:
    """The figures of a cached folder, as plain JSON-able values (what ``--json`` prints): images per class (with
    each label) where the targets have classes, and what their kind adds (:mod:`litstarter._engine.targets`)."""
    names, kind = folder.class_names, folder.kind
    targets = {split: cache.targets(split) for split in cache.splits}
    counts = (
        {split: images_per_class(kind, t, len(names)) for split, t in targets.items()}
        if kind.strata_are_classes
        else {}
    )
    train = counts.get("train", [])
    widths, heights, modes = (
        [v for split in cache.splits for v in cache.column(split, key)] for key in ("width", "height", "mode")
    )
    leaks, near = find_leaks(cache), find_near_leaks(cache)
    largest = [name for name, n in zip(names, train, strict=True) if n == max(train)]
    smallest = [name for name, n in zip(names, train, strict=True) if n == min(train)]
    return {
        "root": str(folder.root),
        "layout": listing.layout,
        "origins": listing.origins,
        "listing_notes": listing.notes,
        "cache": str(cache.folder),
        "cache_reused": cache.reused,
        "target_kind": kind.name,
        "classes": names,
        "images": {split: dict(zip(names, c, strict=True)) for split, c in counts.items()},
        "split_sizes": {split: len(cache.column(split, "path")) for split in cache.splits},
        "imbalance_ratio": round(max(train) / min(train), 2) if train and min(train) > 0 else None,
        "largest_class": largest[0] if largest else None,
        "smallest_class": smallest[0] if smallest else None,
        "largest_classes": largest,
        "smallest_classes": smallest,
        "warnings": _warnings(folder),
        "sizes": {"width": _spread(widths), "height": _spread(heights), **size_extremes(cache)},
        "auto_image_size": auto_side(list(zip(widths, heights, strict=True))),
        "modes": dict(Counter(modes).most_common()),
        "bad_files": cache.skipped,
        "leak_count": len(leaks),
        "leaks": leaks,
        "near_duplicate_distance": NEAR_DISTANCE,
        "near_duplicate_count": len(near),
        "near_duplicates": near,
        "quality": quality_report(cache),
        **kind.summary(targets, names),
    }


def images_per_class(kind, stored, k: int) -> list[int]:
    """Images holding each class (each label; each mask class), from the kind's strata."""
    counts = np.zeros(k, dtype=np.int64)
    strata = kind.strata(stored)[:, :k]
    counts[: strata.shape[1]] = strata.sum(axis=0)
    return counts.tolist()


def _warnings(folder: CachedImageFolder) -> list[str]:
    """What ``fit`` would refuse or regret about the folder, though a report can still be made of it."""
    names = folder.class_names
    if len(names) >= folder.kind.fewest:
        return []
    if not folder.kind.single_class:
        return [
            f"'{folder.root}' has {len(names)} label(s) {names}: fit refuses it, a multi-label classifier needs at"
            " least 2 (rows of data.labels naming them; rows with no label are images with none)"
        ]
    return [
        f"'{folder.root}' has {len(names)} class {names}: fit refuses it, a classifier needs at least 2 (one folder"
        " per class, each holding that class's images)"
    ]


def imbalance(report: dict) -> str:
    """The train split's imbalance in words: ``6.0:1 (cat / dog)``, ties named together (``2.5:1 (a, b / c)``),
    ``none (every class has 5)``."""
    ratio, images = report["imbalance_ratio"], report["images"].get("train")
    if not report["classes"]:
        return "no classes"
    if images is None:
        return f"no classes to balance ({report['target_kind']} targets)"
    if not ratio:
        return "a class has no train images"
    if len(report["classes"]) < 2:
        return f"one class only ({report['classes'][0]})"
    if len(report["smallest_classes"]) == len(report["classes"]):
        return f"none, balanced (every class has {images[report['classes'][0]]})"
    return f"{ratio}:1 ({', '.join(report['largest_classes'])} / {', '.join(report['smallest_classes'])})"


def suggest(report: dict, folder: CachedImageFolder, sampler: str, class_weights: object) -> list[dict]:
    """Settings that follow from the figures: ``[{"option", "value", "why"}]``."""
    found = []
    ratio = report["imbalance_ratio"]
    if report.get("label_sets"):  # multi-label: a loss weight per label, not a sampler
        found += [s for s in [pos_weight_suggestion(report["label_sets"], class_weights)] if s]
    elif ratio and ratio > IMBALANCE_LIMIT and sampler == "none" and class_weights is None and folder.kind.single_class:
        why = f"the train split is imbalanced {imbalance(report)}; or set model.class_weights: auto"
        found.append({"option": "data.sampler", "value": "balanced", "why": why})
    if report["modes"] and set(report["modes"]) <= GREY_MODES and folder.channels != 1:
        found.append({"option": "data.channels", "value": 1, "why": "every image is greyscale"})
    side, reason = report["auto_image_size"]
    size = min(folder.image_size)
    if size > 1.25 * side or size < 0.8 * side:  # what data.image_size: auto would pick, by the same function
        why = f"{side} px here: {reason}; data.image_size is {size}"
        found.append({"option": "data.image_size", "value": "auto", "why": why})
    if report["bad_files"] and folder.on_bad_file == "error":
        found.append({"option": "data.on_bad_file", "value": "skip", "why": "or fix or remove the bad files"})
    return found


def validation_baseline(cache, num_classes: int) -> dict | None:
    """``fit``'s linear baseline (``litstarter.baseline``) on the cached train split, scored on validation."""
    if not {"train", "val"} <= set(cache.splits):
        return None
    train, val = (cache.images("train"), cache.targets("train")), (cache.images("val"), cache.targets("val"))
    found = fit_linear_baseline(train, val, num_classes)
    if found is None:
        return None
    return {
        "val_acc": found.acc,
        "val_f1_macro": found.f1_macro,
        "train_images": found.train_images,
        "seconds": round(found.seconds, 2),
    }


def render(report: dict) -> str:
    """The report as a table for the terminal."""
    splits = list(report["split_sizes"])
    width = max([len("total"), *(len(c) for c in report["classes"])])
    lines = [
        f"layout  {report['layout']}",
        "splits  " + ", ".join(f"{split}: {origin}" for split, origin in report["origins"].items()),
        f"cache   {report['cache']} ({'reused' if report['cache_reused'] else 'built now'})",
        "",
        f"{'class':<{width}}" + "".join(f"{s:>8}" for s in splits),
    ]
    for name in report["classes"] if report["images"] else []:
        lines.append(f"{name:<{width}}" + "".join(f"{report['images'][s][name]:>8}" for s in splits))
    lines.append(f"{'total':<{width}}" + "".join(f"{report['split_sizes'][s]:>8}" for s in splits))
    lines.append(f"imbalance (train): {imbalance(report)}")
    lines += target_kind(report["target_kind"]).summary_lines(report)
    sizes = report["sizes"]
    if sizes.get("smallest"):
        lines.append(
            "sizes (w x h): "
            + ", ".join(
                f"{name} {sizes[name]['width']}x{sizes[name]['height']} ({shown(sizes[name]['path'])})"
                for name in ("smallest", "median", "largest")
            )
        )
    if report["listing_notes"]:
        lines.append(f"left out of the listing: {report['listing_notes']}")
    lines.append("modes: " + ", ".join(f"{mode} {n}" for mode, n in report["modes"].items()))
    lines += [f"bad files: {len(report['bad_files'])}"] + [
        f"  {shown(b['path'])}: {b['reason']}" for b in report["bad_files"]
    ]
    baseline = report.get("baseline")
    lines.append(
        f"baseline: logistic regression on raw pixels scores {baseline['val_acc']:.3f} val accuracy (macro-F1"
        f" {baseline['val_f1_macro']:.3f}, {baseline['train_images']} training images, {baseline['seconds']:.1f} s):"
        " what a network should clearly beat"
        if baseline
        else "baseline: none (it needs a train and a validation split with two classes)"
    )
    lines.append(f"images in more than one split: {report['leak_count']}")
    lines += [f"  {describe(leak)}" for leak in report["leaks"]]
    lines.append(
        f"near-duplicates across splits (perceptual hash within {report['near_duplicate_distance']} of 64 bits):"
        f" {report['near_duplicate_count']}"
    )
    lines += [f"  {describe(pair)}" for pair in report["near_duplicates"]]
    lines += render_quality(report["quality"])
    lines.append("suggestions:" if report["suggestions"] else "suggestions: none")
    lines += [f"  {s['option']}: {s['value']}  ({s['why']})" for s in report["suggestions"]]
    return "\n".join(lines)


def render_quality(quality: dict, named: int = NAMED_FILES) -> list[str]:
    """The quality checks' lines: one per check with its count, then its first ``named`` files (``--json`` lists
    them all)."""
    lines = []
    for check in quality.values():
        files = check["files"]
        lines.append(f"{check['what']}: {len(files)}")
        lines += [f"  {shown(path)}" for path in files[:named]]
        if len(files) > named:
            lines.append(f"  ... and {len(files) - named} more (--json lists them all)")
    return lines


USAGE = """usage: litstarter inspect [--config FILE ...] --data.root FOLDER [--data.KEY VALUE ...] [--json]

Report an image folder without training: layout, images per class and split, imbalance, image sizes and
modes, bad files, images in more than one split (identical or near-duplicates), quality checks (dark, bright,
blurry, odd aspect, grey in colour, near-constant), and suggested settings. Takes fit's --config files and
options (only data.* and model.class_weights are read), and uses (or builds) the same image cache as fit.

  --json    print the report as JSON instead of a table
"""


def main(argv: list[str]) -> int:
    """``litstarter inspect``; returns the exit code (user errors raise ``UserError``)."""
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    as_json = "--json" in argv
    config = parse_fit_config([a for a in argv if a != "--json"])
    show_litstarter_logs()  # the cache's own lines (a build starting, why it is rebuilt) on stderr
    folder = image_folder_of(config)
    listing = folder.listing()
    # Bad files are left out of the cache and listed, not fatal: reporting them is the point.
    cache = folder.load_or_build(listing, on_bad_file="skip")
    report = summarize(folder, listing, cache)
    single = folder.kind.single_class  # a linear classifier and class weights need one class per image
    report["baseline"] = validation_baseline(cache, len(folder.class_names)) if single else None
    model = config.model.get("init_args") or config.model  # the task's arguments
    weights = model.get("class_weights") if single else model.get("pos_weight")
    report["suggestions"] = suggest(report, folder, loader_setting(config, "sampler"), weights)
    print(json.dumps(report, indent=2) if as_json else render(report))
    for warning in report["warnings"]:
        print(f"litstarter inspect: warning: {warning}", file=sys.stderr)
    return 0
