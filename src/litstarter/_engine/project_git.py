"""git, as ``litstarter new`` and ``litstarter update`` use it on a project: copier updates git-tracked projects
only, from a git-tracked template (the library's ``template.bundle``)."""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources
from pathlib import Path

from litstarter.errors import UsageError

#: Who commits when the owner's git has no identity configured (a fresh machine, a CI runner).
FALLBACK_IDENTITY = ("-c", "user.name=litstarter", "-c", "user.email=litstarter@localhost")


def template_bundle() -> Path:
    """The project template this library ships: a git bundle, one commit per release tagged ``v<version>``."""
    return Path(str(resources.files("litstarter") / "template.bundle"))


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo``; its output. A failure is one line naming the command and git's reason."""
    if shutil.which("git") is None:
        raise UsageError("git is not installed: litstarter new and update keep the project in git (copier needs it)")
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        reason = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise UsageError(f"git {' '.join(args)} in '{repo}' failed: {reason[-1] if reason else done.returncode}")
    return done.stdout


def has_identity(repo: Path) -> bool:
    """Whether git would know whom to record as the author of a commit in ``repo``."""
    found = subprocess.run(["git", "config", "user.email"], cwd=repo, capture_output=True, text=True, check=False)
    return bool(found.stdout.strip())


def commit(repo: Path, message: str, *paths: str) -> None:
    """Commit ``paths`` (everything when none) in ``repo``, as the owner, or as litstarter where git knows nobody."""
    git(repo, "add", "--all", *(["--", *paths] if paths else []))
    identity = () if has_identity(repo) else FALLBACK_IDENTITY
    git(repo, *identity, "commit", "--quiet", "--no-verify", "-m", message, *(["--", *paths] if paths else []))


def uncommitted(repo: Path) -> list[str]:
    """The paths ``git status`` shows as changed, staged or untracked in ``repo`` (relative to it)."""
    return [line[3:] for line in git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()]
