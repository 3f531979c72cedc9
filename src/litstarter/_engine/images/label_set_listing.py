"""The splits of a multi-label labels file (:mod:`.label_sets`), for :func:`.layout.list_sources`."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from .label_sets import carve_sets, multi_hot
from .labels_csv import found_rows
from .listing import Found, Walker
from .splits import BY_LABEL_SETS, SPLIT_NAMES, Listing, SourceFile, carved_origin, source_file


def label_sets_listing(root: Path, layout, val_fraction: float, test_fraction: float, seed: int) -> Listing:
    """A multi-label file's splits: from its ``split`` column, else carved by iterative stratification. Every file's
    ``label`` is 0: the targets are the rows' label sets (:meth:`Layout.targets`)."""
    walker = Walker(root)
    by_split: dict[str, list[Found]] = defaultdict(list)
    sets: dict[Path, tuple[str, ...]] = {}
    for row, found in found_rows(walker, root, layout.labels, layout.rows):
        if found:
            sets[found[0].path] = row.labels
        by_split[row.split or "train"].extend(found)

    def carved(files: list[Found], test: float) -> dict[str, list[SourceFile]]:
        targets = multi_hot([sets[f.path] for f in files], layout.class_names)
        parts = carve_sets(files, targets, val_fraction, test, seed, layout.labels.name)
        return {split: sorted((source_file(root, f, 0) for f in part), key=_by_path) for split, part in parts.items()}

    name, how = layout.labels.name, BY_LABEL_SETS
    if not any(row.split for row in layout.rows):
        sources = carved(by_split["train"], test_fraction)
        origins = {
            split: carved_origin(
                name, f"{split}_fraction", val_fraction if split == "val" else test_fraction, seed, how
            )
            for split in sources
        }
        origins["train"] = f"{name}, the rest"
        return Listing(
            layout.describe(root), {s: sources[s] for s in SPLIT_NAMES if s in sources}, origins, walker.report()
        )
    sources = {
        split: sorted((source_file(root, f, 0) for f in files), key=_by_path) for split, files in by_split.items()
    }
    origins = {split: f"{name} split={split}" for split in sources}
    if "val" not in sources:
        sources |= carved(by_split["train"], 0.0)
        origins["train"] = f"{name} split=train less val"
        origins["val"] = carved_origin(f"{name} split=train", "val_fraction", val_fraction, seed, how)
    return Listing(
        layout.describe(root), {s: sources[s] for s in SPLIT_NAMES if s in sources}, origins, walker.report()
    )


def _by_path(source: SourceFile) -> bytes:
    return os.fsencode(source.path)
