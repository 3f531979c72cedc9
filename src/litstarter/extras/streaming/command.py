"""``litstarter optimize``: write a fit's data as LitData shards, for training from a folder or object storage.

    litstarter optimize --config configs/default.yaml --config configs/data/image_folder.yaml --data.root <folder>
                        --output <dir or s3://...> [--overwrite] [--num_workers N] [--encoded]

It takes ``fit``'s ``--config`` stack and options (parsed by the CLI's own parser; only ``data`` is built), builds
the data module as ``fit`` does (an image folder lists, splits and caches through its cache, with the same bad-file
and channels rules), and writes every split's cached uint8 images, labels and sample ids with LitData's
``optimize()``, beside a ``shards.json`` (see :mod:`litstarter._engine.images.shards`). Train from the result with
``--data litstarter.data.StreamingDataModule --data.root <output>``. An unchanged source is not written again.
``--encoded`` (an image folder only) stores each accepted file's own bytes instead of the uint8 array; training
decodes them per sample with the cache's decode at the manifest's ``resize_size`` (``storage`` in ``shards.json``).
"""

from __future__ import annotations

import time

import lightning as L
from jsonargparse import ArgumentParser

from litstarter._engine.images.shards import SHARDS_VERSION, manifest_problem, read_manifest
from litstarter._engine.run.logs import show_litstarter_logs
from litstarter._engine.targets import target_kind
from litstarter.cli import FIT_CLASSES, LitStarterCLI, fill_in_backbone_resize, interpolation_of, resize_size_of
from litstarter.errors import UsageError
from litstarter.extras.streaming.convert import is_empty, write_shards
from litstarter.extras.streaming.output import check_apart, what_overwrite_removes
from litstarter.extras.streaming.samples import (
    Split,
    check_convertible,
    check_encodable,
    fingerprint,
    input_paths,
    read_splits,
    source_params,
    split_description,
)

USAGE = __doc__.split("\n\n")[1]
OWN_OPTIONS = ("--output", "--overwrite", "--num_workers", "--encoded")


class ParseOnly(LitStarterCLI):
    """The CLI up to its parsed config (a timm backbone's resize filled in): no run folder, nothing built."""

    def before_instantiate_classes(self) -> None:
        """A ``timm/`` backbone's resize into ``data``, as ``fit`` does; no run folder is claimed."""
        fill_in_backbone_resize(self.config)

    def instantiate_classes(self) -> None:
        """Nothing: only the config is wanted."""


def fit_data_module(args: list[str]) -> L.LightningDataModule:
    """The data module ``litstarter fit <args>`` would train on, built (not prepared), with no loader workers."""
    cli = ParseOnly(**FIT_CLASSES, run=False, args=args)
    data = cli.config.data.as_dict()
    data["init_args"] = {**data.get("init_args", {}), "num_workers": 0}
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--data", type=L.LightningDataModule)
    return parser.instantiate_classes(parser.parse_object({"data": data})).data


def split_options(argv: list[str]) -> tuple[dict, list[str]]:
    """``({output, overwrite, num_workers, encoded}, the fit arguments)``; a missing or bad value is one line."""
    options, rest, i = {"output": None, "overwrite": False, "num_workers": 2, "encoded": False}, [], 0
    while i < len(argv):
        key, has_value, value = argv[i].partition("=")
        if key not in OWN_OPTIONS:
            rest.append(argv[i])
        elif key in ("--overwrite", "--encoded"):
            options[key[2:]] = not has_value or value.lower() in ("true", "1", "yes")
        else:
            if not has_value:
                if i + 1 == len(argv):
                    raise UsageError(f"{key} needs a value")
                i, value = i + 1, argv[i + 1]
            options[key[2:]] = value
        i += 1
    if not options["output"]:
        raise UsageError("--output is required: the shard folder or s3:// prefix to write")
    try:
        options["num_workers"] = int(options["num_workers"])
        assert options["num_workers"] >= 1
    except (ValueError, AssertionError):
        raise UsageError(f"--num_workers must be an integer >= 1, got {options['num_workers']!r}") from None
    return options, rest


def shards_manifest(datamodule, splits: dict[str, Split], params: dict, fingerprint_: str) -> dict:
    """What ``shards.json`` records: everything training needs besides the shards themselves."""
    mean, std = datamodule.normalization()
    kind = getattr(datamodule, "target_kind", "class")
    try:  # images per class (or with each label), for class_weights: auto; values have none
        counts = target_kind(kind).class_counts(splits["train"].targets, len(datamodule.class_names)).tolist()
    except (KeyError, UsageError):
        counts = None
    return {
        "version": SHARDS_VERSION,
        "target_kind": kind,
        "class_names": list(datamodule.class_names),
        "channels": int(datamodule.channels),
        "image_size": list(datamodule.image_size),
        "resize_size": list(resize_size_of(datamodule) or datamodule.image_size),
        "interpolation": interpolation_of(datamodule),
        "mean": [float(m) for m in mean],
        "std": [float(s) for s in std],
        "class_counts": counts,
        "splits": {name: {"count": len(split.ids)} for name, split in splits.items()},
        "split_description": split_description(datamodule, splits),
        "storage": params.get("storage", "uint8"),
        "params": params,
        "fingerprint": fingerprint_,
    }


def main(argv: list[str]) -> int:
    """``litstarter optimize``; returns the exit code (user errors raise ``UserError``)."""
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    options, fit_args = split_options(argv)
    output, started = options["output"], time.perf_counter()
    datamodule = fit_data_module(fit_args)
    check_apart(output, input_paths(datamodule))  # the output is replaced whole: never over the source
    empty = is_empty(output)
    existing = None if empty else read_manifest(output)
    # What --overwrite would remove; anything but shards there is refused (with --overwrite, or with no shards.json)
    replacing = not empty and (existing is None or options["overwrite"])
    removes = what_overwrite_removes(output) if replacing else None
    refusal = f"--output {output} is not empty; pass --overwrite to replace what it holds"
    if not empty and existing is None and not options["overwrite"]:
        raise UsageError(refusal)  # before any work: nothing of ours is there
    show_litstarter_logs()  # the cache's own lines (a build starting, why it is rebuilt) on stderr
    check_convertible(datamodule)  # before the cache is built
    if options["encoded"]:
        check_encodable(datamodule)
    datamodule.prepare_data()
    datamodule.setup("fit")
    splits = read_splits(datamodule, options["encoded"])
    params = source_params(datamodule, "encoded" if options["encoded"] else "uint8")
    digest = fingerprint(datamodule, params, splits)
    if existing is not None and manifest_problem(existing) is None and existing["fingerprint"] == digest:
        print(f"litstarter optimize: {output} is up to date (the same source and parameters); nothing written")
        return 0
    if existing is not None and not options["overwrite"]:
        raise UsageError(f"{refusal} (its shards.json is of another source or parameters)")
    if removes is not None:
        print(f"litstarter optimize: --overwrite replaces what {output} held: {removes}")
    write_shards(splits, shards_manifest(datamodule, splits, params, digest), output, options["num_workers"])
    total = sum(len(split.ids) for split in splits.values())
    print(
        f"litstarter optimize: wrote {total} images ({', '.join(f'{k} {len(v.ids)}' for k, v in splits.items())})"
        f" to {output} in {time.perf_counter() - started:.1f} s"
    )
    return 0
