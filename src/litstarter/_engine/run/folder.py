"""One run is one directory, whatever the loggers: where ``trainer.logger`` writes, at the config level.

The first logger owns the run directory (Lightning's ``trainer.log_dir`` and ModelCheckpoint's folder come
from it), so it must be a TensorBoardLogger or a CSVLogger. Every other file logger is pointed into the same
folder, so a CSV logger next to TensorBoard writes ``metrics.csv`` beside the events instead of into a sibling
``version_<n+1>``. These functions edit the parsed config before LightningCLI instantiates it; the folder
itself is claimed by :mod:`litstarter._engine.run.claim`.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from litstarter.errors import UsageError

from .claim import FILE_LOGGERS

MLFLOW = "MLFlowLogger"
MLFLOW_RUN_FILE = "mlflow.json"  # the MLflow run id of a run, so a resume logs into the same MLflow run
MLFLOW_INSTALL = "pip install -e '.[mlflow]'"


def logger_entries(config) -> list:
    """The ``trainer.logger`` entries (``class_path`` + ``init_args`` namespaces) as a list; empty if none."""
    logger = (config.get("trainer") or {}).get("logger")
    entries = logger if isinstance(logger, list) else [logger]
    return [e for e in entries if hasattr(e, "class_path")]


def kind(entry) -> str:
    """The logger's class name, e.g. ``TensorBoardLogger``."""
    return str(entry.class_path).rsplit(".", 1)[-1]


def entry_run_dir(entry) -> Path | None:
    """``<save_dir>/<name>/<version>`` of a file logger whose version is set (``version_<n>`` for an int)."""
    if kind(entry) not in FILE_LOGGERS or entry.init_args.get("version") is None:
        return None
    version = entry.init_args.version
    version = version if isinstance(version, str) else f"version_{version}"
    return Path(entry.init_args.save_dir) / (entry.init_args.get("name") or "") / version


def point_file_loggers_at(entries: list, run_dir: Path) -> None:
    """Make every file logger write into ``run_dir`` (``save_dir``, ``name`` and ``version`` set explicitly)."""
    for entry in entries:
        if kind(entry) in FILE_LOGGERS:
            entry.init_args.save_dir = str(run_dir.parent)
            entry.init_args.name = ""
            entry.init_args.version = run_dir.name


def check_loggers(config) -> None:
    """Before anything is created: a file logger's ``name`` and ``version`` stay one folder under its ``save_dir``,
    MLflow, if selected, is installed, and the first logger owns a folder.

    Raises:
        UsageError: One line naming what to fix.
    """
    entries = logger_entries(config)
    if any(kind(e) == MLFLOW for e in entries) and importlib.util.find_spec("mlflow") is None:
        raise UsageError(f"trainer.logger selects MLFlowLogger, but mlflow is not installed: {MLFLOW_INSTALL}")
    for index, entry in enumerate(entries):
        for key in ("name", "version"):
            init_args = getattr(entry, "init_args", None) or {}
            value = init_args.get(key) if kind(entry) in FILE_LOGGERS else None
            if isinstance(value, str) and ("/" in value or "\\" in value or value in (".", "..")):
                where = "trainer.logger" + (f"[{index}]" if len(entries) > 1 else "") + f".init_args.{key}"
                raise UsageError(
                    f"{where} is {value!r}: it is one folder name under save_dir (no '/' or '..'); to write the run"
                    " elsewhere, set trainer.logger.init_args.save_dir"
                )
    if entries and kind(entries[0]) == MLFLOW or len(entries) > 1 and kind(entries[0]) not in FILE_LOGGERS:
        raise UsageError(
            f"trainer.logger: the first logger is a {kind(entries[0])}; put a TensorBoardLogger or CSVLogger first, "
            "it owns the run directory (config.yaml, checkpoints, metrics.json)"
        )


def share_one_run_directory(config) -> None:
    """With several loggers, put them all in the first one's run directory (claimed by
    :func:`litstarter._engine.run.claim.claim_run_directory`, or set by a resume or by tune); fill MLflow's defaults."""
    entries = logger_entries(config)
    for entry in entries:
        if kind(entry) == MLFLOW:
            fill_mlflow_defaults(entry)
    run_dir = entry_run_dir(entries[0]) if len(entries) > 1 else None
    if run_dir is None:  # one logger, or a version left to Lightning (a rank that claims nothing, predict)
        return
    point_file_loggers_at(entries, run_dir)
    for entry in entries:
        if kind(entry) == MLFLOW and entry.init_args.get("run_name") is None:
            entry.init_args.run_name = str(run_dir)


def fill_mlflow_defaults(entry) -> None:
    """``tracking_uri: null`` -> ``$MLFLOW_TRACKING_URI``, else a SQLite store ``<save_dir>/mlflow.db``.

    A SQLite store keeps its artifacts in ``<save_dir>/mlartifacts`` (absolute), never in a stray ``./mlruns``.
    """
    args = entry.init_args
    save_dir = Path(args.get("save_dir") or "runs")
    if not args.get("tracking_uri"):
        args.tracking_uri = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{save_dir / 'mlflow.db'}"
    if args.tracking_uri.startswith("sqlite:///"):
        Path(args.tracking_uri[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
        if not args.get("artifact_location"):
            args.artifact_location = str((save_dir / "mlartifacts").resolve())


def resume_in_the_checkpoints_run(config) -> bool:
    """``fit --ckpt_path <save_dir>/<name>/<version>/checkpoints/last.ckpt`` keeps writing into that run.

    One run stays one directory: the curves continue, and ModelCheckpoint finds its own dirpath in the
    checkpoint, so it restores its best-so-far score and path (a new directory would forget them, and
    test-after-fit could then test a worse checkpoint than one saved before the interruption). Only when the
    checkpoint is a ``last*.ckpt`` under the first logger's configured ``<save_dir>/<name>/`` and no ``version``
    was set; otherwise Lightning starts a new version as usual (resuming from an older checkpoint into the same
    folder would overwrite the later ``last.ckpt``). With the ``version`` set (the SLURM script's ``job_<id>``, a
    ``--resume``), a checkpoint inside that run's folder (``hpc_ckpt_<n>.ckpt`` too) continues it. Every other
    logger follows the first; an MLflow logger continues the MLflow run recorded in ``<run>/mlflow.json``.
    Returns whether the run directory was reused.
    """
    ckpt_path = config.get("ckpt_path")
    entries = logger_entries(config)
    if not ckpt_path or not Path(ckpt_path).is_file() or not entries or kind(entries[0]) not in FILE_LOGGERS:
        return False
    ckpt = Path(ckpt_path).resolve()
    leader = entries[0].init_args
    if leader.get("version") is not None:  # the folder is given: continue it if the checkpoint is its own
        run_dir = entry_run_dir(entries[0]).resolve()
        if run_dir not in ckpt.parents:
            return False
        continue_mlflow_run(entries, run_dir)
        return True
    run_dir = ckpt.parent.parent
    configured = (Path(leader.save_dir) / (leader.get("name") or "")).resolve()
    if not ckpt.name.startswith("last") or ckpt.parent.name != "checkpoints" or run_dir.parent != configured:
        return False
    leader.version = run_dir.name
    continue_mlflow_run(entries, run_dir)
    return True


def write_into(config, run_dir: Path) -> None:
    """Make the run-folder logger (and so every file logger) write into ``run_dir``, a run being resumed: its
    ``version`` when ``run_dir`` lies in the logger's ``<save_dir>/<name>/``, else all three."""
    entries = [e for e in logger_entries(config) if kind(e) in FILE_LOGGERS]
    if not entries:
        return
    leader = entries[0].init_args
    configured = (Path(leader.get("save_dir") or ".") / (leader.get("name") or "")).resolve()
    if run_dir.resolve().parent == configured:
        leader.version = run_dir.name
    else:
        point_file_loggers_at(entries, run_dir)


def continue_mlflow_run(entries: list, run_dir: Path) -> None:
    """Give each MLflow logger without a ``run_id`` the one recorded in ``<run_dir>/mlflow.json``."""
    import json

    record = run_dir / MLFLOW_RUN_FILE
    if not record.is_file():
        return
    recorded = json.loads(record.read_text())
    for entry in entries:
        if kind(entry) == MLFLOW and entry.init_args.get("run_id") is None:
            fill_mlflow_defaults(entry)
            if entry.init_args.tracking_uri == recorded.get("tracking_uri"):  # the same store, so the same run
                entry.init_args.run_id = recorded.get("run_id")
