"""Where a study lives: ``<save_dir>/<name>/cv-<k>/``, or ``cv-<k>-v1``, ``cv-<k>-v2``, ... for another study of
the same name and k (other data, another config or seed), so that no study is refused or overwritten by another.

A study's folder is the one whose ``study.json`` records the same study (run again, it resumes there), or else the
first without a ``study.json``, claimed by creating that file exclusively (a hard link of a file written whole,
which fails if the name exists): two studies started at the same moment never take one folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from litstarter.errors import UsageError

STUDY_FILE = "study.json"


def study_base(config: dict[str, Any], folds: int) -> Path:
    """``<save_dir>/<name>/cv-<k>``, from the first logger of the resolved config: the first study's folder and the
    stem of the others'."""
    logger = (config.get("trainer") or {}).get("logger")
    first = (logger[0] if isinstance(logger, list) and logger else logger) or {}
    args = first.get("init_args") if isinstance(first, dict) else None
    if not args or not args.get("save_dir"):
        raise UsageError("cv needs trainer.logger to be a TensorBoardLogger or CSVLogger with a save_dir")
    return Path(args["save_dir"]) / (args.get("name") or "") / f"cv-{folds}"


def _candidate(base: Path, n: int) -> Path:
    return base if n == 0 else base.with_name(f"{base.name}-v{n}")


def _recorded(folder: Path) -> object:
    """The study ``folder/study.json`` records (``None`` without one; a file that is no JSON reads as no study)."""
    try:
        return json.loads((folder / STUDY_FILE).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"unreadable": True}


def _create_exclusively(path: Path, text: str) -> bool:
    """Create ``path`` holding ``text`` unless it exists; whether this call created it. Readers never see it half
    written: the text is written to a temporary file first, then linked to ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # a filesystem without hard links: an exclusive create (a reader may see it short)
            try:
                with open(path, "x") as handle:
                    handle.write(text)
            except FileExistsError:
                return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def claim_study(base: Path, study: dict[str, Any]) -> Path:
    """The folder of ``study`` (folds, seed, data digest, config): the one among ``base``, ``base-v1``, ... that
    records it already (the study resumes there), else the first that records none, claimed for it."""
    expected = json.loads(json.dumps(study))  # as read back from study.json (lists, not tuples)
    taken = [base, *sorted(base.parent.glob(f"{base.name}-v*"), key=lambda p: p.name)]
    for folder in taken:
        if folder.is_dir() and _recorded(folder) == expected:
            return folder
    text = json.dumps(study, indent=2, sort_keys=True) + "\n"
    n = 0
    while True:
        folder = _candidate(base, n)
        if not (folder / STUDY_FILE).exists():
            folder.mkdir(parents=True, exist_ok=True)
            if _create_exclusively(folder / STUDY_FILE, text) or _recorded(folder) == expected:
                return folder  # ours, or the same study started at the same moment
        elif _recorded(folder) == expected:
            return folder
        n += 1
