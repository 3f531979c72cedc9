"""``litstarter export``: a checkpoint -> weights.pt, TorchScript, torch.export, ONNX and INT8 ONNX, each verified.

Usage::

    litstarter export --ckpt_path runs/digits/version_0/checkpoints/last.ckpt [--formats onnx int8] [--out DIR]

Every artifact is written under a temporary name, loaded back in its own runtime (through the same
:func:`~.backends.open_model` that ``infer`` uses), run on a seeded, class-stratified sample of the
test split at batch sizes 1 and 32 and compared with the eager model in eval mode. Only artifacts within
tolerance are kept; one whose exporter or runtime raises is rejected with its error. The figures go to
``export_report.json`` and a printed table. Without ``--formats``, an artifact that falls short is left out (the
table says why) and the export succeeds if ``model.onnx``, what ``infer`` and ``serve`` use, is written; a format
named in ``--formats`` that falls short exits 1 naming the artifact and the figure or error.
``model.json`` (the input contract, see :mod:`.contract`) is written beside the artifacts,
and the ONNX, TorchScript and pt2 files embed the same JSON. The export is built in a staging folder beside
``--out`` and replaces the folder's export only once complete.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

import litstarter
from litstarter._engine.arguments import ArgumentParser
from litstarter._engine.atomic_io import write_json
from litstarter._engine.errors import run_reporting
from litstarter.errors import UsageError
from litstarter.extras.deploy.checkpoint import network_from_checkpoint
from litstarter.extras.deploy.contract import SIDECAR_NAME, ModelContract
from litstarter.extras.deploy.export_data import ExportError, load_export_data
from litstarter.extras.deploy.export_folder import (
    FORMATS,
    REPORT_NAME,
    SERVED_FORMATS,
    TRITON_DIR,
    check_out_dir,
    make_staging,
    replace_export,
    run_folder,
)
from litstarter.extras.deploy.export_job import ExportJob
from litstarter.extras.deploy.triton import write_triton_repository
from litstarter.extras.deploy.verify import Tolerances, format_report
from litstarter.models.network import architecture_of


def export_checkpoint(
    ckpt_path: str | os.PathLike,
    out: str | os.PathLike | None = None,
    formats: Sequence[str] | None = None,
    overwrite: bool = False,
    config: str | os.PathLike | None = None,
    opset: int = 18,
    calibration_images: int = 300,
    verify_samples: int = 512,
    tolerances: Tolerances = Tolerances(),
    trust_model: bool = False,
    triton_max_batch_size: int | None = None,
) -> dict:
    """Export, verify and report; the returned report (also ``export_report.json``) says which artifacts passed.

    Args:
        ckpt_path: The Lightning checkpoint; loaded with ``weights_only=True``.
        out: Output folder; ``None`` means ``<run>/export``, where the run is the folder above ``checkpoints/``
            for ``<run>/checkpoints/x.ckpt`` and otherwise the checkpoint's own folder.
        formats: Keys of :data:`FORMATS` to produce; ``None``: every format the network and task can have (one
            they cannot is reported under ``skipped``; named here, it is rejected), and one that falls short other
            than :data:`SERVED_FORMATS` is left out (``left_out``: file name -> why) rather than rejected.
        overwrite: Replace an export already in ``out`` (as a whole: stale artifacts are removed).
        config: The run's ``config.yaml``, whose data module provides test and calibration images;
            ``None`` means ``<run>/config.yaml`` (the run as for ``out``).
        opset: ONNX opset (18 or newer).
        calibration_images: Train images to calibrate INT8 with (a seeded sample, stratified by class).
        verify_samples: Test images to verify on at batch size 32 (the first 64 also at batch size 1); a seeded
            sample, stratified by class.
        tolerances: What each artifact must meet.
        trust_model: Export a checkpoint whose backbone class lives outside litstarter (loading it imports and runs
            that class's module).
        triton_max_batch_size: Also write a Triton model repository ``triton/`` from the verified ``model.onnx``
            with this ``max_batch_size`` (:mod:`.triton`); ``None``: none. Needs ``"onnx"`` in ``formats``.

    Raises:
        FileNotFoundError: If the checkpoint does not exist.
        ValueError: (``CheckpointError``, ``ExportError``) for a refused checkpoint, an existing export without
            ``overwrite``, or a config whose data does not match the checkpoint.
    """
    ckpt_path = Path(ckpt_path)
    asked = formats is not None
    formats = tuple(FORMATS) if formats is None else tuple(formats)
    if not formats or any(f not in FORMATS for f in formats):
        raise ExportError(f"--formats {list(formats)}: expected some of {list(FORMATS)}")
    if triton_max_batch_size is not None and "onnx" not in formats:
        raise ExportError(f"--triton needs the onnx format, and --formats is {list(formats)}")
    net, hparams = network_from_checkpoint(ckpt_path, trust_model=trust_model)
    out = Path(out) if out is not None else run_folder(ckpt_path) / "export"
    check_out_dir(out, overwrite)
    config_path = Path(config) if config is not None else run_folder(ckpt_path) / "config.yaml"
    data = load_export_data(config_path, hparams, verify_samples, calibration_images)
    contract = ModelContract.from_hparams(
        hparams, *net.normalization(), resize_size=data.resize_size, architecture=architecture_of(hparams)
    )
    source = {"checkpoint": str(ckpt_path), "config": str(config_path)}
    source |= {"litstarter": litstarter.__version__, "torch": torch.__version__}
    staging = make_staging(out)  # built beside `out`, moved in once complete (see replace_export)
    try:
        job = ExportJob(net, contract, data, staging, opset, tolerances)
        refused = job.refusals()
        skipped = {} if asked else {FORMATS[f][0]: why for f, why in refused.items() if f in formats}
        results = {}
        for fmt in (f for f in FORMATS if f in formats):  # onnx before int8, which quantizes the verified model.onnx
            name = FORMATS[fmt][0]
            if fmt in refused and asked:
                results[name] = {"passed": False, "error": refused[fmt], "failures": [f"{name}: {refused[fmt]}"]}
            elif fmt not in refused:
                results[name] = job.export(fmt)
        if triton_max_batch_size is not None and "model.onnx" in job.artifacts:
            write_triton_repository(
                staging / "model.onnx", contract, staging / TRITON_DIR, "model", triton_max_batch_size
            )
        write_json(staging / SIDECAR_NAME, {**contract.to_dict(), "artifacts": job.artifacts, "source": source})
        left_out = {} if asked else left_out_of(results)
        report = job.report(results, source, out, skipped, left_out)
        write_json(staging / REPORT_NAME, report)
        replace_export(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


def left_out_of(results: dict[str, dict]) -> dict[str, str]:
    """The artifacts that fell short and a default export goes on without (any but those of
    :data:`SERVED_FORMATS`), each with why: its failures, less the file name they start with."""
    served = {FORMATS[f][0] for f in SERVED_FORMATS}
    return {
        name: "; ".join(failure.removeprefix(f"{name}: ") for failure in r["failures"])
        for name, r in results.items()
        if not r["passed"] and name not in served
    }


def build_parser() -> argparse.ArgumentParser:
    """The ``litstarter export`` argument parser."""
    parser = ArgumentParser(
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
        default=None,
        choices=list(FORMATS),
        help="Which artifacts: weights (weights.pt), ts (model.ts), pt2 (model.pt2), onnx (model.onnx), "
        "int8 (model.int8.onnx). Default: all that the model and task can have (a detector has no pt2 or int8), "
        "leaving out any but model.onnx that falls short of its tolerance; one named here that does exits 1.",
    )
    parser.add_argument("--overwrite", action="store_true", help="Replace an export already in --out.")
    parser.add_argument(
        "--config",
        default=None,
        help="The run's config.yaml (for its data); default: <run>/config.yaml, the run found as for --out.",
    )
    parser.add_argument(
        "--trust_model",
        action="store_true",
        help="Export a checkpoint whose backbone is your own class (outside litstarter): loading it imports and "
        "runs that class's module, so only for code you trust.",
    )
    parser.add_argument(
        "--triton",
        action="store_true",
        help="Also write a Triton model repository from the verified model.onnx: triton/model/config.pbtxt, "
        "triton/model/1/model.onnx and triton/model/labels.txt.",
    )
    parser.add_argument(
        "--triton_max_batch_size", type=int, default=32, help="max_batch_size in the Triton config (with --triton)."
    )
    parser.add_argument("--opset", type=int, default=18, help="ONNX opset (18 or newer).")
    parser.add_argument("--calibration_images", type=int, default=300, help="Train images to calibrate INT8 with.")
    parser.add_argument("--verify_samples", type=int, default=512, help="Test images to verify every artifact on.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``litstarter export``; returns 0 (artifacts left out of a default export included), 1 if an artifact
    named in ``--formats`` (or, by default, ``model.onnx``) was rejected (failed verification, or its exporter or
    runtime failed) or the checkpoint is unusable, 2 for bad arguments or paths (see :mod:`litstarter.errors`)."""
    return run_reporting("export", lambda: _run(argv))


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.opset < 18:
        raise UsageError(f"--opset must be 18 or newer, got {args.opset}")
    if args.triton and args.triton_max_batch_size < 1:
        raise UsageError(f"--triton_max_batch_size must be >= 1, got {args.triton_max_batch_size}")
    report = export_checkpoint(
        args.ckpt_path,
        args.out,
        args.formats,
        args.overwrite,
        args.config,
        args.opset,
        args.calibration_images,
        args.verify_samples,
        trust_model=args.trust_model,
        triton_max_batch_size=args.triton_max_batch_size if args.triton else None,
    )
    print(format_report(report))
    for name, why in report["skipped"].items():
        print(f"skipped {name}: {why}")
    triton = f", {TRITON_DIR}/model/" if args.triton and (Path(report["out"]) / TRITON_DIR).is_dir() else ""
    print(
        f"wrote {', '.join(n for n, r in report['artifacts'].items() if r['passed'])}{triton}, {SIDECAR_NAME} and "
        f"{REPORT_NAME} to {report['out']}"
    )
    left_out = report["left_out"]
    if left_out:
        named = " ".join(f for f in FORMATS if FORMATS[f][0] in left_out)
        print(f"left out {', '.join(left_out)} (why: in the table); name {named} in --formats to require it")
    if not report["passed"]:
        for name, r in report["artifacts"].items():
            for failure in r["failures"] if name not in left_out else ():
                print(f"litstarter export: rejected {failure}", file=sys.stderr)
        return 1
    return 0
