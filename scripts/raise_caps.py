"""``make update-deps``: propose raising each dependency's cap to admit its newest release; ``--apply`` writes them.

Every requirement in pyproject.toml has a floor the suite passed on and a cap: below the next major, or below the
next minor for the dependencies whose private internals we use (tests/test_compat.py lists them). A cap of one
component (``<3``) is raised to the next major after the newest release, one of two (``<4.54``) to the next minor,
so the kind of cap is kept. ``make update-deps APPLY=1`` writes them and renews the hashed locks (scripts/lock.py):
the locks are written only once the suite passes on them, and the old caps come back if it fails. Raise the floors
too once it passes.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def requirements(text: str) -> Iterator[str]:
    """Every requirement string of a pyproject text (core, then each extra); our own extras are left out."""
    import tomllib  # Python >= 3.11

    project = tomllib.loads(text)["project"]
    groups = [project.get("dependencies", []), *project.get("optional-dependencies", {}).values()]
    for group in groups:
        yield from (r for r in group if Requirement(r).name != project["name"])


def cap_of(requirement: str) -> Version | None:
    """The ``<`` bound of a requirement, or None (an exact pin such as ruff's, or no cap)."""
    caps = [Version(s.version) for s in Requirement(requirement).specifier if s.operator == "<"]
    return caps[0] if caps else None


def raised_cap(cap: Version, newest: Version) -> Version | None:
    """The cap that admits ``newest``, of the same kind as ``cap`` (major or minor); None if it admits it already."""
    if newest < cap:
        return None
    if len(cap.release) == 1:
        return Version(str(newest.major + 1))
    return Version(f"{newest.major}.{newest.minor + 1}")


def newest_release(name: str) -> Version | None:
    """The newest release on the package index (``pip index versions``), or None where pip cannot tell."""
    cmd = [sys.executable, "-m", "pip", "index", "versions", name]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    found = re.search(rf"^{re.escape(name)} \(([^)]+)\)", out, re.I | re.M)
    return Version(found[1]) if found else None


def proposals(text: str, newest: Callable[[str], Version | None]) -> list[tuple[str, str]]:
    """``(requirement, requirement with its cap raised)`` for each whose cap keeps out the newest release."""
    found = []
    for req in requirements(text):
        cap, latest = cap_of(req), newest(Requirement(req).name)
        new = raised_cap(cap, latest) if cap is not None and latest is not None else None
        if new is not None:
            found.append((req, re.sub(rf"<{re.escape(str(cap))}(?=[,;\s]|$)", f"<{new}", req, count=1)))
    return found


def main(argv: list[str] | None = None) -> int:
    """Print the proposed caps; with ``--apply``, write them into pyproject.toml and upgrade the venv."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apply", action="store_true", help="write the new caps and upgrade the venv to them")
    args = parser.parse_args(argv)
    path = ROOT / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    found = proposals(text, newest_release)
    for old, new in found:
        print(f"  {old} -> {new}")
    if not found:
        print("update-deps: every cap admits the newest release already")
    if not args.apply:
        print("update-deps: make update-deps APPLY=1 writes these and renews the hashed locks, once the suite passes")
        return 0
    raised = text
    for old, new in found:
        raised = raised.replace(f'"{old}"', f'"{new}"', 1)
    path.write_text(raised, encoding="utf-8")
    from lock import renew  # a sibling: make runs this file as a script, so scripts/ is on sys.path

    if renew() != 0:  # the suite failed on the new versions: the old caps stay with the old locks
        path.write_text(text, encoding="utf-8")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
