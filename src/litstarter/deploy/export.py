"""``litstarter export``: a checkpoint -> weights.pt, TorchScript, torch.export, ONNX and INT8 ONNX, each verified.

Usage::

    litstarter export --ckpt_path runs/digits/version_0/checkpoints/last.ckpt [--formats onnx int8] [--out DIR]

Every artifact is written under a temporary name, loaded back in its own runtime (through the same
:func:`litstarter.deploy.backends.open_model` that ``infer`` uses), run on a seeded, class-stratified sample of the
test split at batch sizes 1 and 32 and compared with the eager model in eval mode. Only artifacts within
tolerance are kept; one whose exporter or runtime raises is rejected with its error. The figures go to
``export_report.json`` and a printed table, and any rejection exits 1 naming the artifact and the figure or
error. ``model.json`` (the input contract, see :mod:`litstarter.deploy.contract`) is written beside the artifacts,
and the ONNX, TorchScript and pt2 files embed the same JSON. The export is built in a staging folder beside
``--out`` and replaces the folder's export only once complete.
"""

from __future__ import annotations

import argparse
import glob
import io
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

import litstarter
from litstarter.deploy.backends import open_model, torchscript_quietly
from litstarter.deploy.contract import EMBEDDED_KEY, SIDECAR_NAME, ModelContract
from litstarter.deploy.quantize import quantize_int8
from litstarter.deploy.verify import ArtifactRejected, Tolerances, compare, format_report, run_batches
from litstarter.errors import UsageError, run_reporting
from litstarter.io import atomic_write, write_json
from litstarter.leftovers import owner_tag, remove_stale
from litstarter.models import Classifier
from litstarter.models.classifier import architecture_of
from litstarter.models.weights import classifier_from_checkpoint

#: Format name (for --formats) -> (file name, backend kind).
FORMATS: dict[str, tuple[str, str]] = {
    "weights": ("weights.pt", "weights"),
    "ts": ("model.ts", "torchscript"),
    "pt2": ("model.pt2", "exported"),
    "onnx": ("model.onnx", "onnx"),
    "int8": ("model.int8.onnx", "onnx"),
}
REPORT_NAME = "export_report.json"
ARTIFACT_NAMES = tuple(name for name, _ in FORMATS.values())
#: Every file an export writes; an --out folder holding any of them already holds an export.
EXPORT_FILES = frozenset([*ARTIFACT_NAMES, SIDECAR_NAME, REPORT_NAME])


@dataclass
class ExportData:
    """Real images for verification and calibration, in the eval view of training.

    Args:
        test_images: ``(N, C, H, W)`` uint8 from the test split.
        test_labels: ``(N,)`` int64.
        calibration_images: ``(M, C, H, W)`` uint8 from the train split (no augmentation).
        resize_size: The size the data module stores images at.
        split: Where the verification images come from: ``test``, or ``val`` for data without a test split.
    """

    test_images: np.ndarray
    test_labels: np.ndarray
    calibration_images: np.ndarray
    resize_size: tuple[int, int]
    split: str = "test"


class ExportError(UsageError, ValueError):
    """Bad input to export (an existing export, a config that does not match the checkpoint, ...)."""


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
        labels: ``(N,)`` class index of every item.
        n: How many indices to return.
        seed: Seed for the draw.
    """
    labels = np.asarray(labels)
    order = np.random.default_rng(seed).permutation(len(labels))
    rank = np.empty(len(labels))  # an item's place within its class, as a fraction of the class
    for c in np.unique(labels):
        members = order[labels[order] == c]  # class c in random order
        rank[members] = (np.arange(len(members)) + 0.5) / len(members)
    return order[np.argsort(rank[order], kind="stable")][:n]


def _eval_view(dataset, indices: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Items of an ``ArrayImageDataset`` by plain index (the deterministic, un-augmented view)."""
    items = [dataset[int(i)] for i in indices]
    images = np.stack([np.asarray(image) for image, _ in items])  # (N, C, H, W) uint8
    return images, np.asarray([label for _, label in items], dtype=np.int64)


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
    recorded = hparams.get("cache_size")
    if recorded is not None and tuple(recorded) != stored:
        raise ExportError(
            f"the checkpoint records cache_size={list(recorded)} but the data module from {config_path} stores "
            f"images at {list(stored)}; inference would resize differently from training"
        )
    test_images, test_labels = _eval_view(held_out, stratified_sample(held_out.labels, verify_samples, seed))
    calibration, _ = _eval_view(dm.train_set, stratified_sample(dm.train_set.labels, calibration_images, seed))
    return ExportData(test_images, test_labels, calibration, stored, split)


def _batch_dim() -> dict:
    return {0: torch.export.Dim("batch", min=1)}


def write_weights(net: Classifier, path: Path, contract: ModelContract, example: torch.Tensor) -> dict:
    """``weights.pt``: the state_dict only (loads with ``torch.load(..., weights_only=True)``)."""
    torch.save(net.state_dict(), path)
    return {"format": "state_dict", "loads_with": "torch.load(path, weights_only=True)"}


def write_torchscript(net: Classifier, path: Path, contract: ModelContract, example: torch.Tensor) -> dict:
    """``model.ts``: TorchScript by tracing (deprecated since torch 2.10; one warning per process)."""
    with torchscript_quietly(), torch.no_grad():
        traced = torch.jit.trace(net, example)
        torch.jit.save(traced, str(path), _extra_files={EMBEDDED_KEY: contract.to_json()})
    return {"format": "torchscript", "method": "trace", "deprecated_since": "torch 2.10"}


def write_exported(net: Classifier, path: Path, contract: ModelContract, example: torch.Tensor) -> dict:
    """``model.pt2``: ``torch.export`` with a dynamic batch dimension."""
    program = torch.export.export(net, (example,), dynamic_shapes=(_batch_dim(),))
    buffer = io.BytesIO()  # torch.export.save insists on a ".pt2" name; we write a temporary one
    torch.export.save(program, buffer, extra_files={EMBEDDED_KEY: contract.to_json()})
    path.write_bytes(buffer.getvalue())
    return {"format": "torch.export", "dynamic_batch": True}


def write_onnx(net: Classifier, path: Path, contract: ModelContract, example: torch.Tensor, opset: int = 18) -> dict:
    """``model.onnx``: the dynamo-based exporter, dynamic batch, input ``input`` / output ``logits``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=DeprecationWarning)
        program = torch.onnx.export(
            net,
            (example,),
            dynamo=True,
            input_names=[contract.input_name],
            output_names=[contract.output_name],
            dynamic_shapes=(_batch_dim(),),
            opset_version=opset,
            verbose=False,
        )
    program.model.metadata_props[EMBEDDED_KEY] = contract.to_json()
    program.save(str(path))
    return {"format": "onnx", "opset": opset, "dynamic_batch": True}


def run_folder(ckpt_path: Path) -> Path:
    """The run a checkpoint belongs to: ``<run>`` for ``<run>/checkpoints/x.ckpt``, else the checkpoint's folder."""
    folder = ckpt_path.resolve().parent
    return folder.parent if folder.name == "checkpoints" else folder


def replace_export(staging: Path, out: Path) -> None:
    """Move the finished export in ``staging`` into ``out``, replacing any export there.

    The old export's files go first (``model.json`` and the report before its artifacts) and the new ones come
    in last (``model.json`` and the report after the artifacts), so ``out`` never holds artifacts of two exports
    and a ``model.json`` never sits beside another export's artifacts. Other files in ``out`` are left alone.
    """
    out.mkdir(parents=True, exist_ok=True)
    for name in (SIDECAR_NAME, REPORT_NAME, *ARTIFACT_NAMES):
        (out / name).unlink(missing_ok=True)
    for name in (*ARTIFACT_NAMES, SIDECAR_NAME, REPORT_NAME):
        if (staging / name).exists():
            os.replace(staging / name, out / name)


def check_out_dir(out: Path, overwrite: bool) -> None:
    """Refuse an --out that already holds an export, unless ``overwrite``."""
    existing = sorted(p.name for p in out.iterdir() if p.name in EXPORT_FILES) if out.is_dir() else []
    if existing and not overwrite:
        raise ExportError(f"{out} already holds an export ({', '.join(existing)}); pass --overwrite to replace it")
    if out.exists() and not out.is_dir():
        raise ExportError(f"--out {out} exists and is not a folder")
    # The export is staged beside `out` and moved into it: both folders must take files, checked before the work.
    for folder in dict.fromkeys([out, out.parent]):
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        try:
            fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=folder)
            os.close(fd)
            os.unlink(probe)
        except OSError as err:
            raise ExportError(f"--out {out} cannot be written: folder '{folder}': {err.strerror}") from None


def export_checkpoint(
    ckpt_path: str | os.PathLike,
    out: str | os.PathLike | None = None,
    formats: Sequence[str] = tuple(FORMATS),
    overwrite: bool = False,
    config: str | os.PathLike | None = None,
    opset: int = 18,
    calibration_images: int = 300,
    verify_samples: int = 512,
    tolerances: Tolerances = Tolerances(),
) -> dict:
    """Export, verify and report; the returned report (also ``export_report.json``) says which artifacts passed.

    Args:
        ckpt_path: The Lightning checkpoint; loaded with ``weights_only=True``.
        out: Output folder; ``None`` means ``<run>/export``, where the run is the folder above ``checkpoints/``
            for ``<run>/checkpoints/x.ckpt`` and otherwise the checkpoint's own folder.
        formats: Keys of :data:`FORMATS` to produce.
        overwrite: Replace an export already in ``out`` (as a whole: stale artifacts are removed).
        config: The run's ``config.yaml``, whose data module provides test and calibration images;
            ``None`` means ``<run>/config.yaml`` (the run as for ``out``).
        opset: ONNX opset (18 or newer).
        calibration_images: Train images to calibrate INT8 with (a seeded sample, stratified by class).
        verify_samples: Test images to verify on at batch size 32 (the first 64 also at batch size 1); a seeded
            sample, stratified by class.
        tolerances: What each artifact must meet.

    Raises:
        FileNotFoundError: If the checkpoint does not exist.
        ValueError: (``CheckpointError``, ``ExportError``) for a refused checkpoint, an existing export without
            ``overwrite``, or a config whose data does not match the checkpoint.
    """
    ckpt_path = Path(ckpt_path)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ExportError(f"--formats {list(formats)}: expected some of {list(FORMATS)}")
    net, hparams = classifier_from_checkpoint(ckpt_path)
    out = Path(out) if out is not None else run_folder(ckpt_path) / "export"
    check_out_dir(out, overwrite)
    config_path = Path(config) if config is not None else run_folder(ckpt_path) / "config.yaml"
    data = load_export_data(config_path, hparams, verify_samples, calibration_images)
    contract = ModelContract.from_hparams(
        hparams, *net.normalization(), resize_size=data.resize_size, architecture=architecture_of(hparams)
    )

    batch_sizes = {32: data.test_images, 1: data.test_images[:64]}
    reference = {b: run_batches(net, images, b) for b, images in batch_sizes.items()}
    eager_accuracy = float((reference[32].argmax(1) == data.test_labels).mean())
    example = torch.from_numpy(data.test_images[:2].copy())  # batch 2: a batch of 1 would specialise the dim

    ordered = [f for f in FORMATS if f in formats]  # onnx before int8: int8 quantizes the model.onnx verified here
    results: dict[str, dict] = {}
    artifacts: dict[str, dict] = {}
    out.parent.mkdir(parents=True, exist_ok=True)
    # The export is built in a staging folder beside `out` and moved in only once complete: a failure or a kill
    # part-way leaves `out` as it was. Its name carries our pid and host, so the next export removes what a
    # killed one left (litstarter.leftovers has the rule).
    remove_stale(out.parent.glob(f".{glob.escape(out.name)}.*.staging"))
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.{owner_tag()}.", suffix=".staging", dir=out.parent))
    try:
        for fmt in ordered:
            name, kind = FORMATS[fmt]
            started = time.perf_counter()
            info: dict = {}

            def write_and_verify(tmp: Path, fmt=fmt, name=name, kind=kind, info=info) -> None:
                if fmt == "int8":
                    # The model.onnx verified above; without one (not asked for, or rejected), a fresh fp32 export.
                    fp32 = staging / "model.onnx" if "model.onnx" in artifacts else staging / ".fp32.onnx"
                    if not fp32.exists():
                        write_onnx(net, fp32, contract, example, opset)
                    info.update(quantize_int8(fp32, tmp, data.calibration_images, contract))
                elif fmt == "onnx":
                    info.update(write_onnx(net, tmp, contract, example, opset))
                else:
                    writer = {"weights": write_weights, "ts": write_torchscript, "pt2": write_exported}[fmt]
                    info.update(writer(net, tmp, contract, example))
                backend = open_model(tmp, kind=kind, contract=contract, trust_model=True)  # made just now, by us
                outputs = {b: run_batches(backend, images, b) for b, images in batch_sizes.items()}
                figures = compare(name, outputs, reference, data.test_labels, fmt == "int8", tolerances)
                figures["runtime"] = backend.runtime
                if not figures["passed"]:
                    raise ArtifactRejected(figures)  # atomic_write removes the temporary file
                info["figures"] = figures

            try:
                atomic_write(staging / name, write_and_verify)
                figures = info.pop("figures")
                artifacts[name] = info
            except ArtifactRejected as rejected:
                figures = rejected.figures
            except Exception as err:  # the exporter or the runtime failed on this model: reject this artifact only
                error = f"{type(err).__name__}: {err}"
                figures = {"passed": False, "error": error, "failures": [f"{name}: export failed: {error}"]}
            figures["seconds"] = round(time.perf_counter() - started, 2)
            if "quantization" in info:
                figures["quantization"] = info["quantization"]
            results[name] = figures

        stale = sorted(n for n in ARTIFACT_NAMES if n not in artifacts and (out / n).exists())
        source = {
            "checkpoint": str(ckpt_path),
            "config": str(config_path),
            "litstarter": litstarter.__version__,
            "torch": torch.__version__,
        }
        write_json(staging / SIDECAR_NAME, {**contract.to_dict(), "artifacts": artifacts, "source": source})
        report = {
            "source": source,
            "out": str(out),
            "eager": {"accuracy": eager_accuracy, "runtime": f"torch {torch.__version__}"},
            "verification": {
                "split": data.split,
                "samples": int(len(data.test_images)),
                "batch_sizes": {str(b): int(len(images)) for b, images in batch_sizes.items()},
            },
            "tolerances": {
                "fp32": {"rtol": tolerances.rtol, "atol": tolerances.atol, "top1_agreement": 1.0},
                "int8": {"max_accuracy_drop": tolerances.int8_max_accuracy_drop},
            },
            "artifacts": results,
            "removed_stale": stale,
            "passed": all(r["passed"] for r in results.values()),
        }
        write_json(staging / REPORT_NAME, report)
        replace_export(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


def build_parser() -> argparse.ArgumentParser:
    """The ``litstarter export`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="litstarter export",
        description="Export a checkpoint to verified deployment artifacts, with a model.json input contract.",
    )
    parser.add_argument("--ckpt_path", required=True, help="The Lightning checkpoint (.ckpt) to export.")
    parser.add_argument(
        "--out",
        default=None,
        help="Output folder; default: <run>/export beside checkpoints/ (or beside the checkpoint if it is "
        "not in a checkpoints/ folder).",
    )
    parser.add_argument(
        "--formats",
        nargs="+",
        default=list(FORMATS),
        choices=list(FORMATS),
        help="Which artifacts: weights (weights.pt), ts (model.ts), pt2 (model.pt2), onnx (model.onnx), "
        "int8 (model.int8.onnx). Default: all.",
    )
    parser.add_argument("--overwrite", action="store_true", help="Replace an export already in --out.")
    parser.add_argument(
        "--config",
        default=None,
        help="The run's config.yaml (for its data); default: <run>/config.yaml, the run found as for --out.",
    )
    parser.add_argument("--opset", type=int, default=18, help="ONNX opset (18 or newer).")
    parser.add_argument("--calibration_images", type=int, default=300, help="Train images to calibrate INT8 with.")
    parser.add_argument("--verify_samples", type=int, default=512, help="Test images to verify every artifact on.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``litstarter export``; returns 0, 1 if an artifact was rejected (failed verification, or its exporter
    or runtime failed) or the checkpoint is unusable, 2 for bad arguments or paths (see :mod:`litstarter.errors`)."""
    return run_reporting("export", lambda: _run(argv))


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.opset < 18:
        raise UsageError(f"--opset must be 18 or newer, got {args.opset}")
    report = export_checkpoint(
        args.ckpt_path,
        args.out,
        args.formats,
        args.overwrite,
        args.config,
        args.opset,
        args.calibration_images,
        args.verify_samples,
    )
    print(format_report(report))
    print(
        f"wrote {', '.join(n for n, r in report['artifacts'].items() if r['passed'])}, {SIDECAR_NAME} and "
        f"{REPORT_NAME} to {report['out']}"
    )
    if not report["passed"]:
        for r in report["artifacts"].values():
            for failure in r["failures"]:
                print(f"litstarter export: rejected {failure}", file=sys.stderr)
        return 1
    return 0
