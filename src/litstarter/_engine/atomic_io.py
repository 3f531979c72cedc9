"""Atomic file writes: a reader (or a resumed run) never sees a half-written file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def _read_umask() -> int:
    # os.umask can only be read by setting it; do it once, at import, before any writer thread exists.
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then rename it over ``path``.

    The rename is atomic on POSIX within one filesystem, so a kill at any moment leaves either the old
    file or the new one, never a torn one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        write(tmp_path)
        # mkstemp creates 0600; give the file the permissions a plain open() would (0666 minus the umask).
        os.chmod(tmp_path, 0o666 & ~_UMASK)
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
    return path


def write_json(path: str | os.PathLike, data) -> Path:
    """Write ``data`` as indented JSON, atomically."""
    return atomic_write(path, lambda tmp: tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n"))


def unwritable_reason(folder: Path) -> tuple[Path, str | None]:
    """Whether files can be created in ``folder`` (or, if it doesn't exist yet, its nearest existing parent).

    Returns the folder actually probed and ``None``, or the OS's reason it refused a probe file.
    """
    while not folder.exists() and folder != folder.parent:  # missing folders are created later
        folder = folder.parent
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        return folder, err.strerror or str(err)
    return folder, None
