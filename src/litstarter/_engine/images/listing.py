"""Walking folders without lying: each real folder listed once, each real file counted once, odd names kept.

The rules, shared by training's folder listing and inference on files:

* **Directory links** are followed when they lead *outside* the folder being listed (a class folder that
  is a link to another disk works). A link that leads back *inside* it (``loop -> ..``, ``self -> .``, a
  link to a sibling class) is not followed: what it points at is listed where it really is, once. Outside,
  a folder already listed is not entered again, so a loop out there ends too. Every link left unfollowed
  is reported (:attr:`Walker.skipped_links`).
* **A real file is counted once.** Two names for one file (a hard link, a file link to a listed file) keep
  the first name in sorted order; the others are reported (:attr:`Walker.duplicates`).
* **Files that can't be stat'ed** (a dangling link, a file-link loop, a permission error) are listed with
  their ``problem``, so the caller treats them as bad files instead of crashing or dropping them.
* **Names that aren't valid UTF-8** are kept as Python keeps them (surrogate escapes); :func:`shown` turns
  them into printable text with the odd bytes as ``\\xNN``.

Hidden files and folders (a name starting with ``.``) are never listed (:attr:`Walker.hidden` counts them).
Torch-free (``infer`` needs that).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from litstarter.errors import BadInputError


def shown(path: str | os.PathLike) -> str:
    """``path`` as printable UTF-8 text: bytes that aren't valid UTF-8 appear as ``\\xNN``."""
    return os.fsencode(os.fspath(path)).decode("utf-8", "backslashreplace")


def file_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` can't be opened as a file (dangling link, link loop, missing, a folder), or ``None``."""
    try:
        if os.path.isdir(path):
            return "a folder, not a file"
        os.stat(path)
        return None
    except FileNotFoundError:
        if os.path.islink(path):
            return f"dangling symbolic link (its target '{shown(os.readlink(path))}' does not exist)"
        return "missing (no such file)"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "symbolic link loop (the link points back at itself)"
        return f"{type(err).__name__}: {err.strerror or err}"


def _is_dir(entry: os.DirEntry) -> bool:
    """Follows links; False for a dangling link or a link loop (those are files with a problem)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


@dataclass(frozen=True)
class Found:
    """One listed file.

    Args:
        path: The file's path (the folder given to :meth:`Walker.files` joined with the names under it).
        size: Size in bytes (of the link itself when ``problem`` is set).
        mtime_ns: Modification time in ns (of the link itself when ``problem`` is set).
        problem: Why the file can't be read (see :func:`file_problem`), or ``None``.
        ctime_ns: Status-change time in ns (0 when ``problem`` is set): unlike the mtime it can't be set back.
        inode: Inode number (0 when ``problem`` is set): a file replaced by a rename gets a new one.
    """

    path: Path
    size: int
    mtime_ns: int
    problem: str | None = None
    ctime_ns: int = 0
    inode: int = 0


@dataclass
class Walker:
    """Lists files under one or more folders of one data set with the rules in this module's docstring.

    Args:
        top: The folder everything is listed under (``data.root``, an ``--input`` folder): directory links
            leading back inside it are not followed.
    """

    top: Path
    skipped_links: list[Path] = field(default_factory=list)
    hidden: int = 0
    duplicates: list[tuple[Path, Path]] = field(default_factory=list)
    _seen_dirs: set[tuple[int, int]] = field(default_factory=set)
    _seen_files: dict[tuple[int, int], Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.top = Path(self.top)
        self._top_real = os.path.realpath(self.top)

    def _inside_top(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == self._top_real or real.startswith(self._top_real.rstrip(os.sep) + os.sep)

    def under(self, top: str | os.PathLike) -> Walker:
        """A walker for another folder of the same inputs (``infer --input a/ b/ a/x.png``): links are judged
        against ``top``, and what this walker (or another from it) listed is not listed again."""
        return Walker(top, _seen_dirs=self._seen_dirs, _seen_files=self._seen_files)

    def listed(self, folder: str | os.PathLike) -> bool:
        """Whether ``folder`` was listed already (given twice, or inside a folder listed before)."""
        stat = os.stat(folder)
        return (stat.st_dev, stat.st_ino) in self._seen_dirs

    def files(self, folder: str | os.PathLike, keep: Callable[[str], bool] = lambda name: True) -> list[Found]:
        """Visible files under ``folder`` whose name passes ``keep``, sorted by path, walked recursively."""
        found: list[Found] = []
        folder = Path(folder)
        stat = os.stat(folder)
        if (stat.st_dev, stat.st_ino) not in self._seen_dirs:
            self._seen_dirs.add((stat.st_dev, stat.st_ino))
            self._walk(folder, keep, found)
        return found

    def _walk(self, folder: Path, keep: Callable[[str], bool], found: list[Found]) -> None:
        try:
            with os.scandir(folder) as entries:
                ordered = sorted(entries, key=lambda e: os.fsencode(e.name))
        except OSError as err:  # a folder we may not read: its files can't even be named, so nothing to skip
            raise BadInputError(f"cannot list the folder '{shown(folder)}': {err.strerror or err}") from None
        for entry in ordered:
            if entry.name.startswith("."):
                self.hidden += 1
                continue
            path = folder / entry.name
            if _is_dir(entry):
                if entry.is_symlink() and self._inside_top(entry.path):
                    self.skipped_links.append(path)
                    continue
                stat = entry.stat()
                key = (stat.st_dev, stat.st_ino)
                if key in self._seen_dirs:
                    self.skipped_links.append(path)
                    continue
                self._seen_dirs.add(key)
                self._walk(path, keep, found)
            elif keep(entry.name):
                found.extend(self._file(entry, path))

    def _file(self, entry: os.DirEntry, path: Path) -> list[Found]:
        try:
            stat = entry.stat()
        except OSError:
            link = entry.stat(follow_symlinks=False)
            return [Found(path, link.st_size, link.st_mtime_ns, file_problem(path) or "cannot be read")]
        return self._once(path, stat)

    def named(self, path: str | os.PathLike) -> list[Found]:
        """One file named by the user (a labels file's row): listed with its problem if it can't be read."""
        path = Path(path)
        try:
            stat = os.stat(path)
        except OSError:
            try:
                link = os.lstat(path)
                size, mtime_ns = link.st_size, link.st_mtime_ns
            except OSError:
                size, mtime_ns = -1, 0
            return [Found(path, size, mtime_ns, file_problem(path) or "cannot be read")]
        if os.path.isdir(path):
            return [Found(path, -1, 0, "a folder, not a file")]
        return self._once(path, stat)

    def _once(self, path: Path, stat: os.stat_result) -> list[Found]:
        """``[Found]`` the first time a real file (device, inode) is met, ``[]`` (and recorded) after."""
        key = (stat.st_dev, stat.st_ino)
        if key in self._seen_files:
            self.duplicates.append((path, self._seen_files[key]))
            return []
        self._seen_files[key] = path
        return [Found(path, stat.st_size, stat.st_mtime_ns, ctime_ns=stat.st_ctime_ns, inode=stat.st_ino)]

    def report(self) -> str:
        """One sentence on the links not followed and the second names dropped; ``""`` when there are none."""
        parts = []
        if self.skipped_links:
            first = ", ".join(shown(p) for p in self.skipped_links[:3])
            more = f" and {len(self.skipped_links) - 3} more" if len(self.skipped_links) > 3 else ""
            parts.append(
                f"did not follow {len(self.skipped_links)} folder link(s) leading back into '{shown(self.top)}' or"
                f" to a folder already listed ({first}{more}): each folder is listed once, where it really is"
            )
        if self.duplicates:
            first = ", ".join(f"{shown(p)} ({'again' if p == q else f'= {shown(q)}'})" for p, q in self.duplicates[:3])
            more = f" and {len(self.duplicates) - 3} more" if len(self.duplicates) > 3 else ""
            parts.append(f"counted {len(self.duplicates)} file(s) once that another name already lists: {first}{more}")
        return "; ".join(parts)
