"""The images ``litstarter export`` verifies and calibrates on: the run's own data module, rebuilt from its config."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from litstarter.errors import UsageError
from litstarter.extras.deploy.contract import recorded_resize_size


class ExportError(UsageError, ValueError):
    """Bad input to export (an existing export, a config that does not match the checkpoint, ...)."""


@dataclass
class ExportData:
    """Real images for verification and calibration, in the eval view of training.

    Args:
        test_images: ``(N, C, H, W)`` uint8 from the test split.
        test_labels: The data's targets: ``(N,)`` int64 class indices, or ``(N, ...)`` targets of another kind.
        calibration_images: ``(M, C, H, W)`` uint8 from the train split (no augmentation).
        resize_size: The size the data module stores images at.
        split: Where the verification images come from: ``test``, or ``val`` for data without a test split.
    """

    test_images: np.ndarray
    test_labels: np.ndarray
    calibration_images: np.ndarray
    resize_size: tuple[int, int]
    split: str = "test"


def datamodule_from_config(config_path: Path):
    """Instantiate the ``data`` section of a run's ``config.yaml`` (with ``num_workers: 0``)."""
    import yaml
    from jsonargparse import ArgumentParser

    from litstarter.data.base import ArrayDataModule

    config = yaml.safe_load(config_path.read_text())
    if not isinstance(config, dict) or not isinstance(config.get("data"), dict):
        raise ExportError(f"{config_path} has no 'data' section (class_path + init_args) to build the data from")
    data = {**config["data"], "init_args": {**(config["data"].get("init_args") or {}), "num_workers": 0}}
    parser = ArgumentParser(exit_on_error=False)
    parser.add_subclass_arguments(ArrayDataModule, "data", required=True)
    try:
        return parser.instantiate_classes(parser.parse_object({"data": data})).data
    except Exception as err:
        raise ExportError(f"cannot build the data module from {config_path}: {err}") from err


def stratified_sample(labels: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """``n`` indices (all of them if there are fewer) drawn at random within each class, classes in proportion.

    Image-folder splits are ordered by class, so their first ``n`` items would cover only the first classes.
    The returned order interleaves the classes, so every prefix is stratified too.

    Args:
        labels: ``(N,)`` class (or group) index of every item; ``(N, G)``: drawn at random.
        n: How many indices to return.
        seed: Seed for the draw.
    """
    labels = np.asarray(labels)
    order = np.random.default_rng(seed).permutation(len(labels))
    if labels.ndim == 2:  # items in several groups (label sets): no single class to stratify by
        return order[:n]
    rank = np.empty(len(labels))  # an item's place within its class, as a fraction of the class
    for c in np.unique(labels):
        members = order[labels[order] == c]  # class c in random order
        rank[members] = (np.arange(len(members)) + 0.5) / len(members)
    return order[np.argsort(rank[order], kind="stable")][:n]


def load_export_data(
    config_path: Path, hparams: dict, verify_samples: int = 512, calibration_images: int = 300, seed: int = 0
) -> ExportData:
    """Build the run's data module and take seeded, stratified samples of its test and train images.

    Data without a test split is verified on its val split instead (the report says which).

    Raises:
        ExportError: If the data does not match the checkpoint (classes, channels, size, stored size).
    """
    if not config_path.is_file():
        raise ExportError(
            f"no run config at {config_path}; export verifies on the run's own test data, so pass "
            "--config <run>/config.yaml"
        )
    dm = datamodule_from_config(config_path)
    dm.setup("fit")
    if dm.test_set is None:
        dm.setup("test")
    checks = {
        "class_names": (list(dm.class_names), list(hparams.get("class_names") or dm.class_names)),
        "channels": (int(dm.channels), int(hparams["in_channels"])),
        "image_size": (tuple(dm.image_size), tuple(hparams["image_size"])),
    }
    for key, (data_value, ckpt_value) in checks.items():
        if data_value != ckpt_value:
            raise ExportError(
                f"{config_path} builds data with {key}={data_value} but the checkpoint has {key}={ckpt_value}; "
                "is the config from another run?"
            )
    split, held_out = ("test", dm.test_set) if dm.test_set is not None else ("val", dm.val_set)
    stored = tuple(held_out.images.shape[-2:])
    recorded = recorded_resize_size(hparams)
    recorded = None if recorded == "unrecorded" else recorded
    if recorded is not None and tuple(recorded) != stored:
        raise ExportError(
            f"the checkpoint records resize_size={list(recorded)} but the data module from {config_path} stores "
            f"images at {list(stored)}; inference would resize differently from training"
        )
    # The eval view of both: the train split's own items are augmented, calibration must see what inference sees.
    kind = getattr(dm, "target_kind", "class")
    test_images, test_labels = held_out.eval_view(
        stratified_sample(groups_of(held_out.targets, kind), verify_samples, seed)
    )
    train_groups = groups_of(dm.train_set.targets, kind)
    calibration, _ = dm.train_set.eval_view(stratified_sample(train_groups, calibration_images, seed))
    return ExportData(test_images, test_labels, calibration, stored, split)


def groups_of(targets: np.ndarray, kind: str) -> np.ndarray:
    """``(N,)`` the group each item is drawn in proportion from: its class, its band of values (the kind's strata,
    :mod:`litstarter._engine.targets`); ``(N, G)`` where an item is in several (label sets) or the kind is the
    project's own, which :func:`stratified_sample` then draws at random."""
    from litstarter._engine.targets import target_kind
    from litstarter._engine.targets.rows import RaggedRows

    stored = targets if isinstance(targets, RaggedRows) else np.asarray(targets)  # rows: a number per image
    try:
        strata = target_kind(kind).strata(stored)
    except KeyError:
        return np.zeros((len(targets), 2))
    return strata.argmax(axis=1) if (strata.sum(axis=1) == 1).all() else strata
