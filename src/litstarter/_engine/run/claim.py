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

A folder that exists already (a resume, the SLURM script's ``job_<id>``) is *held* while a fit trains in it
(:func:`hold_run`): an exclusive ``flock`` on ``<run>/.fit.lock``, which the kernel drops when the process ends,
however it ends (SIGKILL too), so a killed run never leaves a stale lock. A second fit into a held folder is refused
naming the process that holds it. ``flock`` holds across nodes on NFS (Linux maps it to NFS locks) and on Lustre
mounted with ``-o flock``; where ``fcntl`` does not exist (Windows) nothing is held.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

from litstarter.errors import UsageError

try:
    import fcntl
except ImportError:  # Windows: no flock, nothing is held
    fcntl = None

#: The folder the claiming process took; its launcher's re-run processes inherit it.
CLAIM_ENV = "LITSTARTER_CLAIMED_RUN_DIR"
#: Loggers that write into ``<save_dir>/<name>/<version>/``.
FILE_LOGGERS = ("TensorBoardLogger", "CSVLogger")
VERSION_PREFIX = "version_"
#: The run a ``--resume`` chose (its folder and checkpoint, JSON); the launcher's re-run processes inherit it.
RESUME_ENV = "LITSTARTER_RESUMED_RUN"
#: Held while a fit trains in the folder (see the module docstring); never removed from a folder that stays.
LOCK_FILE = ".fit.lock"
# The folder this process claimed, until end_claim(); in-process runs (tests, tune) claim one after another.
_claimed_here: Path | None = None
# Whether this process set RESUME_ENV (end_claim then removes it).
_resume_handed_on = False
# The run folders this process holds, with the open lock file of each (closing it releases the lock).
_held: dict[Path, int] = {}


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


class RunHeldError(UsageError):
    """Another fit trains in the run folder this one would write into (exit 2)."""


def holder_of(fd: int) -> str:
    """Who holds a lock file, in words, from what it wrote into it (empty while it is just being taken)."""
    try:
        owner = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        owner = {}
    if not owner:
        return "another process (it is just starting)"
    return f"process {owner.get('pid')} on {owner.get('host')}, since {owner.get('since')}"


def hold_run(run_dir: str | os.PathLike) -> None:
    """Hold ``run_dir`` for this process's fit until :func:`end_claim` (or until the process ends).

    Raises:
        RunHeldError: Another process holds it; the message names that process.
    """
    run_dir = Path(os.path.abspath(run_dir))
    if fcntl is None or run_dir in _held:
        return
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # BlockingIOError: held elsewhere
        holder = holder_of(fd)
        os.close(fd)
        raise RunHeldError(
            f"the run folder '{run_dir}' is in use by another fit ({holder}): two fits must not write into one"
            " run. Wait for it to end, or give this fit another run (--resume <run dir>, or no --resume for a new"
            " one)"
        ) from None
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since}).encode(), 0)
    _held[run_dir] = fd


def _forget_held_in_child() -> None:
    """In a forked child (a data loader worker): close its copies of the lock files. A ``flock`` lasts while any
    copy of its descriptor is open, so a worker outliving a SIGKILLed fit (by up to the 5 s a loader worker takes
    to notice) would hold the run, and a resume started at once would be refused naming a dead process. The
    parent's own copy keeps the lock."""
    for fd in _held.values():
        os.close(fd)
    _held.clear()


if hasattr(os, "register_at_fork"):  # not on Windows (which has no flock either)
    os.register_at_fork(after_in_child=_forget_held_in_child)


def hand_on_resume(run_dir: Path, ckpt: Path) -> None:
    """Leave the resumed run in :data:`RESUME_ENV` for the processes Lightning's launcher re-runs (other devices),
    which then resume the same run without choosing again (cleared by :func:`end_claim`)."""
    global _resume_handed_on
    os.environ[RESUME_ENV] = json.dumps([str(run_dir), str(ckpt)])
    _resume_handed_on = True


def inherited_resume() -> tuple[Path, Path] | None:
    """``(run folder, checkpoint)`` a parent process resumed (:func:`hand_on_resume`), or None."""
    if _resume_handed_on or not os.environ.get(RESUME_ENV):
        return None
    run_dir, ckpt = json.loads(os.environ[RESUME_ENV])
    return Path(run_dir), Path(ckpt)


def release_runs() -> None:
    """Let go of every run folder this process holds (the lock files stay: removing one that another process has
    just opened would let two processes hold one folder)."""
    while _held:
        _, fd = _held.popitem()
        os.close(fd)


def end_claim(failed_before_training: bool = False) -> None:
    """After the run: stop handing the folder to new processes, and remove it if it is still empty (the run
    stopped before writing anything), so a failed run leaves no empty ``version_<n>`` behind; with
    ``failed_before_training`` (a refused ``init_from``, a one-class folder, bad files), also when all it holds is
    what setup wrote (``config.yaml``, an empty ``checkpoints/``, a first event file): no checkpoint, no metrics."""
    global _claimed_here, _resume_handed_on
    release_runs()
    if _resume_handed_on:
        os.environ.pop(RESUME_ENV, None)
        _resume_handed_on = False
    claimed, _claimed_here = _claimed_here, None
    if claimed is None:
        return
    if os.environ.get(CLAIM_ENV) == str(claimed):
        del os.environ[CLAIM_ENV]
    kept = ("*.ckpt", "metrics.json")
    if failed_before_training and claimed.is_dir() and not any(any(claimed.rglob(p)) for p in kept):
        shutil.rmtree(claimed, ignore_errors=True)
        return
    lock = claimed / LOCK_FILE
    if lock.is_file() and [p.name for p in claimed.iterdir()] == [LOCK_FILE]:
        lock.unlink()  # a run with nothing else in it: nobody resumes it
    try:
        claimed.rmdir()  # only succeeds while empty
    except OSError:
        pass
