"""``litstarter update``: bring a project ``litstarter new`` wrote the template changes of the installed release.

copier re-renders the template at the project's recorded release (``.copier-answers.yml``: ``_src_path`` at
``_commit``) and at the installed library's (its ``template.bundle``, tag ``v<version>``), and replays the difference
onto the project: an owner's edit survives where the template changed other lines; where both changed the same
lines, copier leaves its inline conflict markers, which this command names in one line. It refuses a project with
uncommitted changes (copier's update needs a clean tree to be reviewable), and nothing is changed then. Library fixes
arrive with the library's version (``make install``); this brings the files the template wrote.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import yaml

from litstarter import __version__
from litstarter._engine.project_git import commit, git, template_bundle, uncommitted
from litstarter.errors import UsageError

ANSWERS = ".copier-answers.yml"
#: How copier marks a conflict inline: the owner's lines, then the template's.
CONFLICT = re.compile(r"^<<<<<<< before updating$", re.M)


def read_answers(project: Path) -> dict:
    """The project's copier answers; one line if it has none."""
    path = project / ANSWERS
    if not path.is_file():
        raise UsageError(f"'{project}' has no {ANSWERS}: litstarter update runs in a project litstarter new wrote")
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def point_at(project: Path, template: Path, answers: dict) -> None:
    """Rewrite a stale ``_src_path`` (the library moved: another venv, another release) to ``template``, committed
    on its own so that copier finds the tree clean."""
    if answers.get("_src_path") == str(template):
        return
    path = project / ANSWERS
    text = path.read_text(encoding="utf-8")
    line = re.compile(r"^_src_path: .*$", re.M)
    path.write_text(line.sub(f"_src_path: {template}", text) if line.search(text) else f"_src_path: {template}\n{text}")
    commit(project, f"litstarter update: the template comes from {template}", ANSWERS)


def conflicted(project: Path) -> list[str]:
    """The files copier left conflict markers in."""
    changed = [project / p for p in uncommitted(project)]
    return sorted(str(p.relative_to(project)) for p in changed if p.is_file() and CONFLICT.search(_text(p)))


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


def update(project: Path, template: Path | None = None, ref: str | None = None, data: dict | None = None) -> str:
    """Update ``project`` to the template at ``ref``; returns the one line that says what happened.

    Args:
        project: The project's folder (its ``.copier-answers.yml`` at the top).
        template: A git-tracked template; None: this library's ``template.bundle``.
        ref: The tag to update to; None: this library's release, ``v<version>``.
        data: Answers to change on the way (the library's version and source, by default this one's).

    Raises:
        UsageError: Not a project of ours, not in git, or with uncommitted changes (nothing is changed).
    """
    import copier

    answers = read_answers(project)
    git(project, "rev-parse", "--git-dir")
    dirty = uncommitted(project)
    if dirty:
        shown = ", ".join(dirty[:3]) + (f" and {len(dirty) - 3} more" if len(dirty) > 3 else "")
        raise UsageError(
            f"'{project}' has uncommitted changes ({shown}): commit or stash them first, so the update can be reviewed"
            " and undone; nothing was changed"
        )
    template, ref = template or template_bundle(), ref or f"v{__version__}"
    before = answers.get("_commit", "?")
    point_at(project, template, answers)
    copier.run_update(
        project, data=data, vcs_ref=ref, defaults=True, overwrite=True, conflict="inline", quiet=True, unsafe=False
    )
    conflicts = conflicted(project)
    if conflicts:
        return (
            f"litstarter update: {before} -> {ref} with conflicts in {', '.join(conflicts)}: keep what you want between"
            " each '<<<<<<< before updating' and '>>>>>>> after updating', then commit"
        )
    changed = uncommitted(project)
    if not changed or changed == [ANSWERS]:
        return f"litstarter update: {before} -> {ref}; the template changed nothing you have"
    return f"litstarter update: {before} -> {ref}, {len(changed)} file(s) changed: review them (git diff), then commit"


def main(argv: list[str] | None = None) -> int:
    """Update the project in the current folder (or ``--project``); 1 when conflicts are left to resolve."""
    parser = argparse.ArgumentParser(prog="litstarter update", description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=Path("."), help="the project's folder (default: here)")
    args = parser.parse_args(argv)
    from litstarter.new import library_source

    project = args.project.resolve()
    line = update(project, data={"litstarter_version": __version__, "litstarter_source": library_source()})
    print(line)
    return 1 if "conflicts in" in line else 0
