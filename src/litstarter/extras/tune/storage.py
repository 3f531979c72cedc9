"""Where a study lives, and how a study notices trials whose worker died.

- No ``--storage``: a journal file, ``<study folder>/journal.log`` (Optuna's ``JournalFileBackend``). Several
  ``litstarter tune`` processes can share it on one machine or a shared filesystem; Optuna's FAQ advises
  against SQLite for parallel workers.
- ``--storage <SQLAlchemy URL>``: a database, e.g. ``postgresql+psycopg://user:pass@host/db`` for a team's
  machines. The connection is tried at once, so a wrong URL fails before any trial starts.

A trial left RUNNING by a worker that died is marked FAIL, not lost: through Optuna's heartbeat on a database
(a trial whose heartbeat is older than the grace period), and on every storage through the host and process id
each trial records when it starts (a trial of this host whose process is gone).
"""

from __future__ import annotations

import os
import random
import socket
import time
import warnings
from pathlib import Path

import optuna
from optuna.trial import TrialState

from litstarter.errors import UsageError

HEARTBEAT_INTERVAL_S = 60
HEARTBEAT_GRACE_S = 180  # a trial silent this long on a database is taken as dead
WORKER_ATTR = "worker"  # user attribute of every trial: {"host", "pid", "started"}


def open_storage(url: str | None, study_dir: Path) -> optuna.storages.BaseStorage:
    """The study's storage: a journal file under ``study_dir``, or the database at ``url``.

    Raises:
        UsageError: The URL is not a SQLAlchemy URL, its driver is missing, or the database cannot be reached.
    """
    if not url:
        study_dir.mkdir(parents=True, exist_ok=True)
        backend = optuna.storages.journal.JournalFileBackend(str(study_dir / "journal.log"))
        return optuna.storages.JournalStorage(backend)
    shown = _hide_password(url)
    if "://" not in url:
        raise UsageError(f"--storage {shown}: expected a SQLAlchemy URL such as postgresql+psycopg://host/db")
    try:
        return _rdb_storage(url)
    except ImportError as err:
        raise UsageError(f"--storage {shown}: its database driver is not installed ({err})") from None
    except Exception as err:  # SQLAlchemy's errors: bad URL, refused connection, wrong password, unknown database
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UsageError(f"--storage {shown}: cannot open the database: {reason}") from None


def _rdb_storage(url: str, attempts: int = 5) -> optuna.storages.RDBStorage:
    """Open (and on first use create) the database's tables. Workers that start together on a fresh database
    race to create them; the losers see a duplicate-table error and simply try again, by then finding them."""
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    for attempt in range(attempts):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # the heartbeat's
                return optuna.storages.RDBStorage(
                    url, heartbeat_interval=HEARTBEAT_INTERVAL_S, grace_period=HEARTBEAT_GRACE_S
                )
        except (IntegrityError, ProgrammingError):
            if attempt == attempts - 1:
                raise
            time.sleep(0.5 + random.random())
    raise AssertionError("unreachable")


def _hide_password(url: str) -> str:
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url


def this_worker() -> dict:
    """``{"host", "pid", "started"}`` of this process; ``started`` tells a reused pid apart."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": _process_start(os.getpid())}


def _process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), or None where /proc is absent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name


def _alive(worker: dict) -> bool:
    try:
        os.kill(int(worker["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, KeyError, TypeError, ValueError):
        return True  # someone else's process, or no pid recorded: not ours to judge
    started = worker.get("started")
    return started is None or _process_start(int(worker["pid"])) in (None, started)


def fail_trials_of_dead_workers(study: optuna.Study) -> list[int]:
    """Mark FAIL the RUNNING trials whose worker is gone; return their numbers.

    Optuna's heartbeat covers databases (any host); the recorded process id covers this host on any storage.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)  # a no-op on storages without a heartbeat (the journal)
    host = socket.gethostname()
    failed = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = trial.user_attrs.get(WORKER_ATTR)
        if worker and worker.get("host") == host and not _alive(worker):
            try:
                study.tell(trial.number, state=TrialState.FAIL)
                failed.append(trial.number)
            except (ValueError, RuntimeError):
                pass  # another worker got there first
    return failed
