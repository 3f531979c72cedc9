"""Temporary files named for their owner, and the removal of those a killed process left behind.

A build (the image cache, an export) writes into temporary files or folders whose names carry an owner tag,
``<pid>@<host>``, and renames them into place when done; a kill leaves them behind. The next run removes a
leftover when its owner is certainly gone:

* same host: the process with that pid is no longer running (age does not matter);
* another host (a filesystem shared by several nodes), or a name without an owner tag: the pid cannot be
  checked from here, so only when it is older than :data:`FOREIGN_MAX_AGE_S` (one day).

A live owner's files are never touched, however old. Standard library only: the light subcommands use it.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import time
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

#: Leftovers whose owner can't be checked (another host, or no owner tag) are removed after this long.
FOREIGN_MAX_AGE_S = 24 * 3600

_OWNER = re.compile(r"^(?P<pid>\d+)@(?P<host>[A-Za-z0-9_-]+)$")


def this_host() -> str:
    """The host name as it appears in owner tags: letters, digits, ``_`` and ``-`` only (no dots)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname()) or "host"


def owner_tag() -> str:
    """``<pid>@<host>`` for this process: unique among the processes of every host sharing a folder."""
    return f"{os.getpid()}@{this_host()}"


def parse_owner(name: str) -> tuple[int, str] | None:
    """``(pid, host)`` from the first dot-separated part of ``name`` that is an owner tag; ``None`` if none is."""
    for part in name.split("."):
        match = _OWNER.match(part)
        if match:
            return int(match["pid"]), match["host"]
    return None


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this host (a process of another user counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(path: Path, now: float | None = None) -> bool:
    """Whether ``path`` is a leftover of a process that is gone (see the module docstring for the rule)."""
    owner = parse_owner(path.name)
    if owner is not None and owner[1] == this_host():
        return owner[0] != os.getpid() and not pid_alive(owner[0])
    try:
        age = (time.time() if now is None else now) - path.lstat().st_mtime
    except FileNotFoundError:
        return False
    return age > FOREIGN_MAX_AGE_S


def remove_stale(paths: Iterable[Path]) -> list[Path]:
    """Remove every stale leftover among ``paths`` (files or folders); returns those removed."""
    removed = []
    for path in paths:
        if not is_stale(path):
            continue
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:  # another process cleaned it up first
            continue
        except OSError as error:  # a leftover we cannot remove must not stop the run
            log.warning("could not remove the leftover %s: %s", path, error)
            continue
        removed.append(path)
    if removed:
        log.info("removed %d leftover(s) of killed runs: %s", len(removed), ", ".join(p.name for p in removed[:3]))
    return removed
