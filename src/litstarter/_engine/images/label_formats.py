"""One interface for the label formats a folder may hold: each format is one file defining a :class:`LabelFormat`
(``FORMAT``), and this module finds which one a folder (or the file ``data.labels`` names) holds.

A format says what it reads and where (:attr:`LabelFormat.reads`), finds itself in a folder from names and a few
sniffed bytes (:meth:`LabelFormat.detect`, cheap: it runs on every folder), recognises a file ``data.labels`` names
(:meth:`LabelFormat.claims`), and reads what it found into its targets' structure (:meth:`LabelFormat.read`: for
boxes, :class:`.box_files.Annotated`). Every path a label file names goes through :func:`.confine.confine` before
anything is opened. A new format is a new module listed in :data:`BOX_FORMATS` (a format of other targets, e.g.
polygons rasterised into masks, a new module and a list of its kind's).

* A folder holding two formats is refused in one line naming both and ``data.box_format``, the option that picks.
* A task that trains on boxes (the CLI says so: :func:`expecting`), pointed at a folder holding none it reads, is
  refused naming the formats it reads and what the folder holds, never as another task's layout
  (:func:`no_boxes`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from litstarter.errors import BadInputError, UsageError

from .listing import shown

#: The box formats' modules, in the order messages list them (their claims on a file exclude each other).
BOX_FORMATS = (
    "coco_json",
    "yolo_files",
    "voc_xml",
    "cvat_xml",
    "labelme_json",
    "label_studio",
    "tf_csv",
    "box_csv",
)
#: ``data.box_format``'s values: each format's :attr:`LabelFormat.name`.
BOX_FORMAT_NAMES = ("coco", "yolo", "boxes", "voc", "tf_csv", "labelme", "cvat", "label_studio")
#: Folders and files named in full where a refusal says what a folder holds; the rest are counted.
NAMED = 8


@dataclass(frozen=True)
class Found:
    """What a format found: the files it reads, each with the split it gives (``None``: none).

    Args:
        format: The format.
        path: What the layout line names: the file read, or the folder of per-image files.
        what: What was found, relative to ``data.root`` (``annotations/*.xml (12 files)``), for messages.
        files: ``((file, split or None), ...)`` to read.
        problems: Bad annotations found already (an id a split file lists without its file), for the reader.
        counted: ``((phrase, count), ...)`` found already (files no split file lists), for the layout line.
    """

    format: LabelFormat
    path: Path
    what: str
    files: tuple[tuple[Path, str | None], ...] = ()
    problems: tuple[str, ...] = ()
    counted: tuple[tuple[str, int], ...] = ()


class LabelFormat:
    """One label format: where it is found, how it is recognised, how it is read (see the module's docstring)."""

    #: ``data.box_format``'s value for it, and the layout line's form (``voc``).
    name: ClassVar[str] = ""
    #: Its name for people (``Pascal VOC XML``).
    title: ClassVar[str] = ""
    #: Where it is read from, relative to ``data.root`` (messages and docs).
    reads: ClassVar[str] = ""
    #: The targets it gives (:mod:`litstarter._engine.targets`).
    targets: ClassVar[str] = "boxes"

    def detect(self, root: Path) -> Found | None:
        """What of this format ``root`` holds, from names and sniffed bytes alone; ``None`` when none."""
        return None

    def claims(self, path: Path) -> bool:
        """Whether ``path`` (a file ``data.labels`` names) is this format's, by its name and first bytes.

        Raises:
            BadInputError: the file is almost this format's (a CSV header with a column mistyped), naming what
                differs.
        """
        return False

    def read(self, root: Path, found: Found):
        """What ``found`` holds (for boxes, an :class:`.box_files.Annotated`), every path confined to ``root``.

        Raises:
            BadInputError: the file cannot be read as this format, or names a path outside ``root``.
        """
        raise NotImplementedError


def box_formats() -> list[LabelFormat]:
    """Every box format, in :data:`BOX_FORMATS`' order."""
    return [importlib.import_module(f"{__package__}.{module}").FORMAT for module in BOX_FORMATS]


@dataclass(frozen=True)
class Expected:
    """What the task the command runs trains on, where the CLI knows it before the data is read."""

    targets: str
    task: str


_EXPECTED: ContextVar[Expected | None] = ContextVar("expected_targets", default=None)


@contextlib.contextmanager
def expecting(targets: str | None, task: str = "the task") -> Iterator[None]:
    """While the data module is built: the task trains on ``targets`` (a folder without them is refused naming
    the formats that give them, :func:`no_boxes`)."""
    token = _EXPECTED.set(Expected(targets, task) if targets else None)
    try:
        yield
    finally:
        _EXPECTED.reset(token)


def expected() -> Expected | None:
    """What the running command's task trains on (:func:`expecting`), if it said."""
    return _EXPECTED.get()


def find_boxes(root: Path, labels: str | None, chosen: str | None = None) -> Found | None:
    """The box format ``root`` holds, or the file ``labels`` names is; ``None`` when none.

    Args:
        root: ``data.root``.
        labels: ``data.labels``: the file decides (``None``: the folder does).
        chosen: ``data.box_format``: only this format is looked for.

    Raises:
        UsageError: ``chosen`` names no format.
        BadInputError: two formats in the folder and none chosen; the chosen one is not there.
    """
    formats = box_formats()
    if chosen is not None:
        picked = [f for f in formats if f.name == chosen]
        if not picked:
            raise UsageError(f"data.box_format must be one of {list(BOX_FORMAT_NAMES)} or null (any), got {chosen!r}")
        formats = picked
    if labels is not None:
        path = root / labels
        if not path.is_file():
            return None  # the labels file's reader says it is missing
        fmt = next((f for f in formats if f.claims(path)), None)
        if fmt is None and chosen is not None:
            raise BadInputError(f"data.labels '{path}' is not {formats[0].title} (data.box_format: {chosen})")
        return Found(fmt, path, shown(labels), ((path, None),)) if fmt else None
    found = [f for f in (fmt.detect(root) for fmt in formats) if f is not None]
    if chosen is not None and not found:
        fmt = formats[0]
        raise BadInputError(
            f"data.box_format: {chosen}, but data.root '{root}' holds no {fmt.title} ({fmt.reads}); found there:"
            f" {holds(root)}"
        )
    if len(found) > 1:
        both = " and ".join(f"{f.format.title} ({f.what})" for f in found)
        choices = " or ".join(f"data.box_format: {f.format.name}" for f in found)
        raise BadInputError(f"data.root '{root}' holds boxes in {len(found)} formats: {both}; choose one: {choices}")
    return found[0] if found else None


def no_boxes(root: Path, labels: str | None, task: str) -> str:
    """The refusal of a folder (or ``data.labels`` file) holding no box format, for ``task`` that trains on boxes:
    what it reads, and what is there."""
    reads = "; ".join(f"{f.title} ({f.reads})" for f in box_formats())
    if labels is not None:
        lead = f"data.labels '{root / labels}' is none of the box files {task} reads"
    else:
        lead = f"data.root '{root}' holds none of the box formats {task} reads; found there: {holds(root)}"
    return f"{lead}. It reads {reads} (docs/detection.md; data.box_format picks one)"


def holds(root: Path) -> str:
    """What ``root`` holds, in a phrase: each folder with its files counted by extension (``annotations/ (12
    .xml)``), then the files beside them by extension."""
    try:
        entries = sorted((e for e in os.scandir(root) if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError as err:
        return f"nothing that can be listed ({err.strerror or err})"
    folders = [e for e in entries if e.is_dir()]
    files = Counter(_extension(e.name) for e in entries if not e.is_dir())
    parts = [f"{shown(e.name)}/ ({_counted(Path(e.path))})" for e in folders[:NAMED]]
    if len(folders) > NAMED:
        parts.append(f"{len(folders) - NAMED} more folder(s)")
    if files:
        parts.append("files " + ", ".join(f"{n} {ext}" for ext, n in files.most_common(NAMED)))
    return ", ".join(parts) or "nothing"


def _counted(folder: Path) -> str:
    """A folder's entries: its files by extension, then its folders (``12 .jpg, 3 folder(s)``)."""
    try:
        names = [(e.name, e.is_dir()) for e in os.scandir(folder) if not e.name.startswith(".")]
    except OSError:
        return "not listed"
    counts = Counter(_extension(name) for name, is_dir in names if not is_dir)
    said = [f"{n} {ext}" for ext, n in counts.most_common(4)]
    said += [f"{sum(is_dir for _, is_dir in names)} folder(s)"] if any(is_dir for _, is_dir in names) else []
    return ", ".join(said) or "empty"


def _extension(name: str) -> str:
    return os.path.splitext(name)[1].lower() or "without extension"
