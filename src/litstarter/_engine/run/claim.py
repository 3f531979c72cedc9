"""Claim a run's ``<save_dir>/<name>/version_<n>`` folder atomically, so two runs never share one.

Lightning picks the next version by listing the folder and creates it later, at the first write: two fits
started together with the same logger name both pick ``version_0`` and write into it (events interleave,
``metrics.json`` is overwritten, ``last.ckpt`` and ``last-v1.ckpt`` get mixed). Here the folder is created
with ``os.mkdir``, which fails if it exists (atomic on a local disk and on NFS/Lustre, so across nodes on a
shared filesystem too), and the next number is tried until one is ours. The version is then set in the
config, before LightningCLI builds the logger.

Only one process of a run claims:

* a plain ``litstarter fit`` (no rank variables) claims, and leaves the folder in :data:`CLAIM_ENV`, which
  the processes Lightning's launcher re-runs for the other devices inherit: they use it and claim nothing;
* under an external launcher (``torchrun``, SLURM, ``NODE_RANK``/``LOCAL_RANK`` set by hand) only global
  rank 0 claims; the other ranks learn the name from rank 0 when the run starts
  (:class:`litstarter.callbacks.ShareRunVersion`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import UsageError

#: The folder the claiming process took; its launcher's re-run processes inherit it.
CLAIM_ENV = "LITSTARTER_CLAIMED_RUN_DIR"
#: Loggers that write into ``<save_dir>/<name>/<version>/``.
FILE_LOGGERS = ("TensorBoardLogger", "CSVLogger")
VERSION_PREFIX = "version_"
# The folder this process claimed, until end_claim(); in-process runs (tests, tune) claim one after another.
_claimed_here: Path | None = None


def global_rank_from_env(environ: os._Environ | dict | None = None) -> int | None:
    """This process's global rank as a launcher set it, or ``None`` when no launcher variables are set.

    ``RANK`` (torchrun, Lightning's own re-runs set it later), ``SLURM_PROCID`` for a multi-task SLURM step,
    else ``NODE_RANK``/``LOCAL_RANK``: rank 0 only on node 0, local process 0.
    """
    env = os.environ if environ is None else environ
    if env.get("RANK", "").isdigit():
        return int(env["RANK"])
    if env.get("SLURM_PROCID", "").isdigit() and int(env.get("SLURM_NTASKS", "1") or 1) > 1:
        return int(env["SLURM_PROCID"])
    node, local = env.get("NODE_RANK", env.get("GROUP_RANK")), env.get("LOCAL_RANK")
    if node is None and local is None:
        return None
    return 0 if int(node or 0) == 0 and int(local or 0) == 0 else 1


def run_dir_logger(config):
    """The config's first file logger entry (``class_path`` + ``init_args``), which owns the run folder, or None."""
    logger = (config.get("trainer") or {}).get("logger")
    entries = logger if isinstance(logger, list) else [logger]
    entries = [e for e in entries if hasattr(e, "class_path")]
    if entries and str(entries[0].class_path).rsplit(".", 1)[-1] in FILE_LOGGERS:
        return entries[0]
    return None


def claim_next_version(root: Path) -> Path:
    """Create and return ``root/version_<n>`` for the lowest free ``n`` above every existing version.

    Raises:
        UsageError: If ``root`` cannot be created or written (the message names the folder).
    """
    try:
        root.mkdir(parents=True, exist_ok=True)
        taken = [int(p.name[len(VERSION_PREFIX) :]) for p in root.iterdir() if _version_number(p.name) is not None]
        n = max(taken) + 1 if taken else 0
        while True:
            candidate = root / f"{VERSION_PREFIX}{n}"
            try:
                candidate.mkdir()  # fails if another run took it first: then try the next number
                return candidate
            except FileExistsError:
                n += 1
    except PermissionError as err:
        raise UsageError(
            f"cannot create the run folder in '{root}': {err.strerror}; make it writable or choose another"
            " trainer.logger.init_args.save_dir"
        ) from err


def _version_number(name: str) -> int | None:
    number = name[len(VERSION_PREFIX) :]
    return int(number) if name.startswith(VERSION_PREFIX) and number.isdigit() else None


def claim_run_directory(config) -> Path | None:
    """Set the run-folder logger's ``version`` to a folder this run owns, claimed atomically; return the folder.

    Nothing happens when the version is already set (a resume, a sweep's trial, the user), or there is no
    file logger. A process that a launcher started for another rank claims nothing (see the module docstring).
    """
    entry = run_dir_logger(config)
    if entry is None or entry.init_args.get("version") is not None:
        return None
    root = Path(entry.init_args.get("save_dir") or ".") / (entry.init_args.get("name") or "")
    inherited = os.environ.get(CLAIM_ENV)
    if inherited and Path(inherited).parent.resolve() == root.resolve():  # a re-run of the claiming process
        entry.init_args.version = Path(inherited).name
        return Path(inherited)
    if global_rank_from_env() not in (None, 0):
        return None  # rank 0 claims; this rank learns the folder when the run starts
    global _claimed_here
    claimed = claim_next_version(root)
    entry.init_args.version = claimed.name
    os.environ[CLAIM_ENV] = str(claimed)
    _claimed_here = claimed
    return claimed


def end_claim(failed_before_training: bool = False) -> None:
    """After the run: stop handing the folder to new processes, and remove it if it is still empty (the run
    stopped before writing anything), so a failed run leaves no empty ``version_<n>`` behind; with
    ``failed_before_training`` (a refused ``init_from``, a one-class folder, bad files), also when all it holds is
    what setup wrote (``config.yaml``, an empty ``checkpoints/``, a first event file): no checkpoint, no metrics."""
    global _claimed_here
    claimed, _claimed_here = _claimed_here, None
    if claimed is None:
        return
    if os.environ.get(CLAIM_ENV) == str(claimed):
        del os.environ[CLAIM_ENV]
    kept = ("*.ckpt", "metrics.json")
    if failed_before_training and claimed.is_dir() and not any(any(claimed.rglob(p)) for p in kept):
        shutil.rmtree(claimed, ignore_errors=True)
        return
    try:
        claimed.rmdir()  # only succeeds while empty
    except OSError:
        pass
