"""Where an export goes: the run's folder, a refusal to overwrite, and the swap of a finished export into place."""

from __future__ import annotations

import glob
import os
import shutil
import tempfile
from pathlib import Path

from litstarter._engine.atomic_io import unwritable_reason
from litstarter._engine.leftovers import owner_tag, remove_stale
from litstarter.extras.deploy.contract import SIDECAR_NAME
from litstarter.extras.deploy.export_data import ExportError

#: Format name (for --formats) -> (file name, backend kind).
FORMATS: dict[str, tuple[str, str]] = {
    "weights": ("weights.pt", "weights"),
    "ts": ("model.ts", "torchscript"),
    "pt2": ("model.pt2", "exported"),
    "onnx": ("model.onnx", "onnx"),
    "int8": ("model.int8.onnx", "onnx"),
}
#: What ``infer`` and ``serve`` are pointed at (docs/deploy.md), which an export without --formats must write; any
#: other artifact that falls short is left out of it, with its reason (named in --formats, it fails the export).
SERVED_FORMATS = ("onnx",)
REPORT_NAME = "export_report.json"
#: The Triton model repository ``litstarter export --triton`` writes (a folder; see :mod:`.triton`).
TRITON_DIR = "triton"
ARTIFACT_NAMES = tuple(name for name, _ in FORMATS.values())
#: Every file an export writes; an --out folder holding any of them already holds an export.
EXPORT_FILES = frozenset([*ARTIFACT_NAMES, SIDECAR_NAME, REPORT_NAME, TRITON_DIR])


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
    if (out / TRITON_DIR).is_dir():
        shutil.rmtree(out / TRITON_DIR)
    for name in (TRITON_DIR, *ARTIFACT_NAMES, SIDECAR_NAME, REPORT_NAME):
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
        probed, reason = unwritable_reason(folder)
        if reason:
            raise ExportError(f"--out {out} cannot be written: folder '{probed}': {reason}")


def make_staging(out: Path) -> Path:
    """A new, empty staging folder beside ``out``, where the export is built before :func:`replace_export`.

    A failure or a kill part-way leaves ``out`` as it was. The folder's name carries our pid and host, so the next
    export removes what a killed one left (``litstarter._engine.leftovers`` has the rule).
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out.parent.glob(f".{glob.escape(out.name)}.*.staging"))
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.{owner_tag()}.", suffix=".staging", dir=out.parent))
