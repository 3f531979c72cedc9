"""Where ``optimize`` may write: never over, above or inside what the data module reads, and with ``--overwrite``
only over a folder (or ``s3://`` prefix) that holds shards and nothing else, naming what it removes."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from litstarter._engine.images.shards import SHARDS_MANIFEST, is_remote, remote_files
from litstarter.errors import UsageError

#: What a shards folder holds: ``shards.json``, and LitData's ``index.json`` and chunks, at the top (a dataset
#: LitData wrote itself) or one folder down (a split of ours).
SHARD_FILE = re.compile(r"(?:[^/]+/)?(?:index\.json|chunk-[^/]*\.bin)|" + re.escape(SHARDS_MANIFEST))
#: The files that make a folder one of shards (without one, chunk-like names are someone else's).
MARKERS = (SHARDS_MANIFEST, "index.json")
#: How many stray names a refusal lists before "and N more".
SHOWN = 5


def check_apart(output: str, inputs: dict[str, Path]) -> None:
    """Refuse, in one line, a local ``output`` that is, contains or lies inside one of ``inputs`` (what the data
    module reads, by the key that names it): the write replaces ``output`` whole, so it would delete the source."""
    if is_remote(output):
        return
    target = Path(output).expanduser().resolve()
    for key, path in inputs.items():
        source = Path(path).expanduser().resolve()
        if target == source:
            relation = "is"
        elif source.is_relative_to(target):
            relation = "contains"
        elif target.is_relative_to(source):
            relation = "lies inside"
        else:
            continue
        raise UsageError(
            f"--output {output} {relation} {key} '{path}', which this conversion reads; nothing was written;"
            " choose an output folder outside it"
        )


def output_files(output: str) -> list[str]:
    """Every file under ``output``, relative to it (``/``-separated); an empty folder as ``name/``."""
    if is_remote(output):
        return remote_files(output)
    root = Path(output).expanduser()
    if not root.is_dir():
        raise UsageError(f"--output {output} is a file; expected a folder (or an s3:// prefix) to write shards to")
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() or path.is_symlink():
            found.append(path.relative_to(root).as_posix())
        elif path.is_dir() and not any(path.iterdir()):
            found.append(path.relative_to(root).as_posix() + "/")
    return found


def what_overwrite_removes(output: str) -> str:
    """What ``--overwrite`` would remove from a non-empty ``output``, as a phrase (``shards.json, train/ (2 files)``).

    Raises:
        UsageError: ``output`` holds anything but shards, naming the first few such files.
    """
    files = output_files(output)
    strays = [name for name in files if not SHARD_FILE.fullmatch(name)]
    if strays or not any(name.rsplit("/", 1)[-1] in MARKERS for name in files):
        listed = strays or files
        shown = ", ".join(listed[:SHOWN]) + (f" and {len(listed) - SHOWN} more" if len(listed) > SHOWN else "")
        raise UsageError(
            f"--output {output} holds files that are not shards ({shown}); --overwrite replaces only a folder of"
            f" shards ({SHARDS_MANIFEST}, LitData's index.json and chunks); choose an empty or new folder"
        )
    folders = Counter(name.split("/", 1)[0] + "/" for name in files if "/" in name)
    tops = [name for name in files if "/" not in name]
    return ", ".join([*tops, *(f"{name} ({count} files)" for name, count in sorted(folders.items()))])
