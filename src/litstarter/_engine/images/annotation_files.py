"""Reading annotation files safely and cheaply: what the format readers (:mod:`.label_formats`) share.

* **XML** is parsed by the standard library's ``ElementTree`` once a file is known to declare no DTD or entity
  (``<!DOCTYPE``, ``<!ENTITY``): annotation tools never write one, and an entity is how an XML file expands a few
  bytes into gigabytes or reads another file. Such a file is refused, not parsed.
* **Sniffing** decides a file's format from its first bytes (a JSON list or object, an XML root element's name),
  so a folder's format is found without parsing every file in it.
* **Splits** of per-image files (a VOC ``.xml``, a LabelMe ``.json``) come from the folders they sit in: the first
  folder of the path, relative to ``data.root``, that is a split name or alias (``train``, ``valid``, ``Test``...).
"""

from __future__ import annotations

import json
import math
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path, PurePosixPath

from .listing import shown
from .splits import canonical_split

#: Bytes read to sniff a file's format.
SNIFF_BYTES = 4096
_DECLARATION = re.compile(rb"<!(DOCTYPE|ENTITY)", re.IGNORECASE)
_ROOT = re.compile(rb"<([A-Za-z_][\w.-]*)")


class Unreadable(Exception):
    """An annotation file that cannot be read, with the phrase that says why (``does not parse as XML: ...``)."""


def read_xml(path: Path) -> ET.Element:
    """The root element of an XML file that declares no DTD or entity.

    Raises:
        Unreadable: the file cannot be read, declares a DTD or an entity, or does not parse.
    """
    try:
        data = path.read_bytes()
    except OSError as err:
        raise Unreadable(f"cannot be read: {err.strerror or err}") from None
    if _DECLARATION.search(data):
        raise Unreadable("declares a DTD or an entity (<!DOCTYPE, <!ENTITY): not read (no annotation tool writes one)")
    try:
        return ET.fromstring(data)
    except ET.ParseError as err:
        raise Unreadable(f"does not parse as XML: {err}") from None


def read_json(path: Path):
    """A JSON file's value (UTF-8, a BOM allowed).

    Raises:
        Unreadable: the file cannot be read or does not parse.
    """
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as err:
        raise Unreadable(f"cannot be read: {err.strerror or err}") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise Unreadable(f"does not parse as JSON: {err}") from None


def head(path: Path) -> bytes:
    """A file's first bytes (past a UTF-8 BOM and white space); ``b""`` if it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read(SNIFF_BYTES).removeprefix(b"\xef\xbb\xbf").lstrip()
    except OSError:
        return b""


def json_kind(path: Path) -> str | None:
    """``list`` or ``object`` by a JSON file's first character; ``None`` for anything else."""
    return {b"[": "list", b"{": "object"}.get(head(path)[:1])


def xml_root(path: Path) -> str | None:
    """The name of an XML file's root element from its first bytes (past the declaration, comments and a DTD, which
    :func:`read_xml` then refuses)."""
    first = re.sub(rb"<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^\[>]*(\[.*?\])?\s*>", b"", head(path), flags=re.DOTALL)
    found = _ROOT.match(first.lstrip())
    return found.group(1).decode("ascii", "replace") if found else None


def split_of(relative: str) -> str | None:
    """The split the folders of ``relative`` (a path relative to ``data.root``) name: the first that is a split
    name or alias (any case), else ``None``."""
    for part in PurePosixPath(relative).parts[:-1]:
        split = canonical_split(part)
        if split:
            return split
    return None


def number(value) -> float | None:
    """``value`` (a number or its text) as a finite float, else ``None``."""
    if isinstance(value, bool):
        return None
    try:
        out = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def relative(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, printable (``/`` separators); a prefix cut where ``path`` is under ``root`` as
    written (``os.path.relpath`` resolves both paths each call: ten times slower)."""
    text, top = os.fspath(path), os.fspath(root).rstrip(os.sep)
    inside = text[len(top) + 1 :] if text.startswith(top + os.sep) else None
    return shown(inside if inside else os.path.relpath(path, root)).replace(os.sep, "/")


def files_in(folder: Path, suffix: str) -> list[Path]:
    """The visible files of ``folder`` (not below it) whose name ends in ``suffix`` (``.xml``, any case), sorted;
    ``[]`` if it is not a folder."""
    try:
        with os.scandir(folder) as entries:
            named = [e for e in entries if e.name.lower().endswith(suffix) and not e.name.startswith(".")]
            return [Path(e.path) for e in sorted(named, key=lambda e: e.name) if _is_file(e)]
    except OSError:
        return []


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def subfolders(folder: Path) -> list[Path]:
    """The visible folders in ``folder``, sorted; ``[]`` if it is not a folder."""
    try:
        with os.scandir(folder) as entries:
            return sorted(Path(e.path) for e in entries if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return []


def bounds(points: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    """The axis-aligned box ``(x1, y1, x2, y2)`` around ``points``."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    return min(xs), min(ys), max(xs), max(ys)


def turned(
    box: tuple[float, float, float, float], degrees: float, about: tuple[float, float]
) -> tuple[float, float, float, float]:
    """The axis-aligned box around ``box`` turned ``degrees`` clockwise (on the image, y down) about a point."""
    if not degrees:
        return box
    x1, y1, x2, y2 = box
    cos, sin = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    ax, ay = about
    corners = [(x, y) for x in (x1, x2) for y in (y1, y2)]
    return bounds([(ax + (x - ax) * cos - (y - ay) * sin, ay + (x - ax) * sin + (y - ay) * cos) for x, y in corners])
