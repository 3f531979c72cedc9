"""Write ``src/litstarter/template.bundle``: the project template as a git history with one commit per release.

copier updates a project only from a git-tracked template: it renders the template at the project's recorded tag and
at the new one and replays the difference. The library's wheel therefore carries its template as a git bundle, one
commit per release, tagged ``v<version>`` (PEP 440), each holding ``src/litstarter/_template`` as it was released.
Writing the bundle for the version in ``litstarter.__version__`` keeps every earlier release's commit and tag, and
replaces this version's commit if it has one already (an unreleased version's template still changes).
tests/test_update.py fails when the bundle's commit for this version differs from ``src/litstarter/_template``.

    python scripts/template_bundle.py        # after changing the template (python scripts/template_tasks.py first)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "src" / "litstarter" / "_template"
BUNDLE = ROOT / "src" / "litstarter" / "template.bundle"
#: The same author and date for every commit: the same template at the same release gives the same commit.
IDENTITY = {
    "GIT_AUTHOR_NAME": "litstarter",
    "GIT_AUTHOR_EMAIL": "release@litstarter.invalid",
    "GIT_COMMITTER_NAME": "litstarter",
    "GIT_COMMITTER_EMAIL": "release@litstarter.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+0000",
}


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo``, with the release identity; its output."""
    env = {**os.environ, **IDENTITY, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def releases(repo: Path) -> list[str]:
    """The release tags of ``repo``, oldest first."""
    from packaging.version import Version

    return sorted(git(repo, "tag", "--list", "v*").split(), key=lambda tag: Version(tag))


def write_bundle(bundle: Path, template: Path, version: str) -> str:
    """Write ``bundle`` with ``template`` committed as release ``version`` on top of the releases ``bundle`` holds
    already; returns the commit."""
    tag = f"v{version}"
    with tempfile.TemporaryDirectory(prefix="template-bundle-") as scratch:
        repo = Path(scratch, "repo")
        older = []
        if bundle.is_file():
            git(Path(scratch), "clone", "--quiet", str(bundle), str(repo))
            held = releases(repo)
            if tag in held and held[-1] != tag:
                raise SystemExit(f"{tag} is an earlier release than {held[-1]}: its template is final")
            older = [t for t in held if t != tag]
        if older:
            git(repo, "checkout", "--quiet", "-B", "main", older[-1])
            if tag in releases(repo):
                git(repo, "tag", "--delete", tag)
        else:  # the first release: a history of its own
            shutil.rmtree(repo, ignore_errors=True)
            repo.mkdir()
            git(repo, "init", "--quiet", "--initial-branch", "main")
        for path in repo.iterdir():
            if path.name != ".git":
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        shutil.copytree(template, repo, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
        git(repo, "add", "--all", "--force")
        git(repo, "commit", "--quiet", "--allow-empty", "-m", f"litstarter {version}: the project template")
        git(repo, "tag", tag)
        written = bundle.with_suffix(".bundle.tmp")
        git(repo, "bundle", "create", str(written), "main", *releases(repo))
        written.replace(bundle)
        return git(repo, "rev-parse", "HEAD").strip()


def main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from litstarter import __version__

    commit = write_bundle(BUNDLE, TEMPLATE, __version__)
    print(f"{BUNDLE.relative_to(ROOT)}: v{__version__} is {commit[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
