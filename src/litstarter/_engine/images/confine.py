"""Nothing a label file names is read from outside ``data.root``: the one check every reader's paths go through.

A labels CSV's ``path`` and ``mask``, a boxes CSV's ``path``, a COCO ``file_name``, YOLO's ``data.yaml`` (``path``,
``train``/``val``/``test``) and the lines of its list files: each reader hands what the file names to
:func:`confine` before it opens any of them. The rule is the spelling's: a name is relative to ``data.root`` (or to
a folder inside it) and, once normalised (``a/../b.png`` is ``b.png``), must not climb out (``../x.png``), be
absolute (``/etc/passwd``, ``C:\\x.png``; a labels CSV may allow absolute paths with ``data.labels_absolute_paths``)
or hold a NUL byte. A ``\\`` counts as a separator here (``..\\x.png`` is refused too). A link inside ``data.root``
may lead elsewhere, as folder links do: the user put it there.
"""

from __future__ import annotations

import ntpath
import posixpath
from collections.abc import Iterable
from pathlib import Path

from litstarter.errors import BadInputError

from .listing import shown

#: Entries named in full in one refusal; the rest are counted.
NAMED = 10
#: Why a relative name is refused.
LEAVES = "leaves data.root"


def outside_root(name: str, allow_absolute: bool = False) -> str | None:
    """Why ``name`` (relative to ``data.root``) may not be opened: ``absolute``, ``leaves data.root``, ``NUL byte``;
    ``None`` when it stays inside. Only the spelling counts (see the module's docstring)."""
    if "\0" in name:
        return "NUL byte"
    if posixpath.isabs(name) or ntpath.splitdrive(name)[0] or name.startswith("\\"):
        return None if allow_absolute else "absolute"
    normal = posixpath.normpath(name.replace("\\", "/"))
    return LEAVES if normal == ".." or normal.startswith("../") else None


def _plain(name: str) -> bool:
    """A bare file name (no separator, drive, ``.``/``..`` or NUL): inside any folder, and normal joined to one."""
    return bool(name) and not any(c in name for c in "/\\:\0") and name not in (".", "..")


def _outside(name: str, base: str, allow_absolute: bool) -> str | None:
    """:func:`outside_root` of ``name`` relative to ``base`` (a folder inside the root): ``sub/../x`` stays inside,
    ``sub/../../x`` leaves."""
    why = outside_root(name, allow_absolute)
    if base and why in (None, LEAVES) and not posixpath.isabs(name):
        why = outside_root(posixpath.join(base, name), allow_absolute)
    return why


def confine(
    source: str,
    root: Path,
    entries: Iterable[tuple[str, str]],
    *,
    what: str = "row(s)",
    thing: str = "a file",
    base: str = "",
    allow_absolute: bool = False,
    absolute_option: str | None = None,
    hint: str = "",
) -> list[str]:
    """Each entry's name joined to ``base`` and normalised, once every one is known to stay inside ``root``.

    Args:
        source: The file that names them, as the message starts (``data.labels 'x.csv'``, ``'x/data.yaml'``).
        root: ``data.root``, named in the message.
        entries: ``(where, name)``: which entry (``line 3``, ``image 7``, ``key train``) and the name as written.
        what: What the entries are, counted in the message (``row(s)``, ``image(s)``, ``key(s)``).
        thing: What each names, in the message (``a file``, ``a folder or list file``).
        base: A folder inside ``root`` (relative to it) that the names are relative to (YOLO's ``path``).
        allow_absolute: Absolute names are allowed (and kept as they are).
        absolute_option: The option that allows them, named in the message; ``None``: none does.
        hint: A sentence appended to the message (a likely cause).

    Returns:
        The names relative to ``root`` (absolute ones as given), normalised, in order.

    Raises:
        BadInputError: every entry outside ``root`` named in one line (the first few, and the count), before any
            of the files is opened.
    """
    entries = list(entries)
    folder = posixpath.normpath(base) if base else "."
    prefix = "" if folder == "." else f"{folder}/"
    # Bare names in a folder inside: the usual case, thousands a folder, taken as they are (no normalising).
    plain = [_plain(name) for _, name in entries] if outside_root(folder) is None else [False] * len(entries)
    bad = [
        (where, name, why)
        for (where, name), fast in zip(entries, plain, strict=True)
        if not fast and (why := _outside(name, base, allow_absolute))
    ]
    inside = [
        prefix + name if fast else posixpath.normpath(posixpath.join(base, name))
        for (_, name), fast in zip(entries, plain, strict=True)
    ]
    if not bad:
        return inside
    listed = ", ".join(f"{where} '{shown(name)}' ({why})" for where, name, why in bad[:NAMED])
    listed += f" and {len(bad) - NAMED} more" if len(bad) > NAMED else ""
    if allow_absolute:
        absolute = "allowed"
    else:
        absolute = f"only with {absolute_option}: true" if absolute_option else "refused"
    raise BadInputError(
        f"{source}: {len(bad)} {what} name {thing} outside data.root '{root}': {listed}. A path must be relative to"
        f" data.root and stay inside it once normalised (absolute paths: {absolute}; a link inside data.root may lead"
        f" elsewhere); no listed file was opened{hint}"
    )
