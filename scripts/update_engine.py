"""Take upstream's fixes: ``make update-engine UPSTREAM=<git url or path> REF=<tag or commit> [APPLY=1]``.

Upstream owns the engine (``src/<package>/_engine/`` and ``tests/unit/_engine/``) and every extra this clone still
has (``src/<package>/extras/<extra>/`` with ``tests/extras/<extra>/``); the owner owns everything else. This takes
upstream's managed files at REF, seen the way this clone sees them: an extra deleted here has its marked lines
removed (as ``make drop-extra`` does), upstream's package name becomes this one (``make rename``'s own replacer),
and a file either changed is formatted with ruff, as both scripts do. Then, per file, against the base recorded in
``.engine-lock.json`` (``scripts/engine_lock.py``: written by ``make rename``, kept by ``make drop-extra`` and by
each update):

* unchanged here since the base, changed upstream: **updated** (or **new**, or **removed** when upstream deleted it);
* edited here, unchanged upstream: **kept** (yours);
* changed on both sides, differently: **conflict**, named in one line; yours stays, and ``--apply`` writes upstream's
  version beside it as ``<file>.upstream``. Merge by hand, then ``--resolved <file>`` records upstream's version
  as the new base. Every other file is applied.

A dry run by default: it prints the table and writes nothing. ``--apply`` (``APPLY=1``) writes the files, the
dependency ranges upstream changed in ``pyproject.toml`` (where this clone still has upstream's old range) and the
lock, then runs ``make test-fast`` (which creates ``.venv`` and installs ``.[dev]`` for its run, and says so
when it starts). A deleted extra stays deleted. The project zone, the configs and the docs are
never written: the files upstream changed there since the base are listed, to take by hand. ``git`` is the only tool
it needs to read upstream; nothing but the standard library is imported.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import engine_lock
import update_deps
from drop_extra import without_marked_lines
from rename import RUFF_PASSES, find_ruff, replacer

ROOT = Path(__file__).resolve().parents[1]
TITLES = {"updated": "updated", "new": "new", "removed": "removed", "kept": "kept (edited here)"}
TITLES |= {"deleted": "kept deleted (deleted here)", "conflict": "conflict"}
#: What --apply runs by default, and what that does beyond testing (the Makefile's test-fast target).
DEFAULT_TESTS = "make test-fast"
DEFAULT_TESTS_DO = "creates .venv if there is none and installs .[dev] into it when pyproject.toml changed"


class Refused(Exception):
    """What update-engine will not do, in one sentence."""


def git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise Refused(f"git {' '.join(args)}: {(proc.stderr.strip().splitlines() or ['failed'])[-1]}")
    return proc.stdout


def fetch(upstream: str, ref: str, into: Path) -> str:
    """Clone ``upstream`` into ``into`` and check out ``ref``; returns its commit."""
    try:
        git("clone", "--quiet", "--no-checkout", upstream, str(into), cwd=into.parent)
    except Refused:
        raise Refused(f"UPSTREAM={upstream} is not a git repository that git can clone") from None
    commit = resolve(ref, into, f"REF={ref} is not a tag, branch or commit of {upstream}")
    git("checkout", "--quiet", "--detach", commit, cwd=into)
    return commit


def resolve(ref: str, tree: Path, otherwise: str) -> str:
    """The commit ``ref`` names in the clone at ``tree``; refused with ``otherwise`` when it names none."""
    try:
        return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=tree).strip()
    except Refused:
        raise Refused(otherwise) from None


class View:
    """Upstream's files as this clone sees them: its extras' markers dropped, its package renamed, then formatted."""

    def __init__(self, root: Path, upstream_name: str, name: str, dropped: list[str]) -> None:
        self.root, self.upstream_name, self.name, self.dropped = root, upstream_name, name, dropped
        self.rename = replacer(upstream_name, name) if upstream_name != name else (lambda text: text)
        self.ruff = find_ruff(root)

    def path(self, upstream_path: str) -> str:
        prefix = f"src/{self.upstream_name}/"
        return f"src/{self.name}/{upstream_path[len(prefix) :]}" if upstream_path.startswith(prefix) else upstream_path

    def text(self, text: str) -> str:
        for extra in self.dropped:
            text = without_marked_lines(text, extra)
        return self.rename(text)

    def content(self, data: bytes, path: str) -> bytes:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:  # binary: nothing to rename
            return data
        seen = self.text(text)
        if seen != text and path.endswith(".py"):
            if self.ruff is None:
                raise Refused("ruff not found (make install-dev): renamed files must be formatted as make rename did")
            for args in RUFF_PASSES:  # as make rename and make drop-extra format what they change
                proc = subprocess.run(
                    [self.ruff, *args, "--stdin-filename", str(self.root / path), "-"],
                    input=seen, capture_output=True, text=True, cwd=self.root, check=True,
                )  # fmt: skip
                seen = proc.stdout
        return seen.encode("utf-8")


def decide(current: bytes | None, incoming: bytes | None, base: str | None) -> str:
    """The fate of one managed file, from this clone's bytes, upstream's (seen here) and the base's hash."""
    digest = engine_lock.digest
    if incoming is None:  # upstream no longer has it
        if current is None:
            return "same"
        return "removed" if digest(current) == base else "kept"
    if current is None:
        if base is None:
            return "new"
        return "deleted" if digest(incoming) == base else "conflict"
    if current == incoming:
        return "same"
    if base is None:  # a file of yours where upstream now adds one
        return "conflict"
    if digest(current) == base:
        return "updated"
    return "kept" if digest(incoming) == base else "conflict"


def plan(root: Path, tree: Path, lock: dict) -> tuple[dict[str, str], dict[str, bytes], View]:
    """``path -> fate`` for every managed file, upstream's contents seen here, and the view that made them."""
    name, upstream_name = engine_lock.package(root), engine_lock.package(tree)
    kept = engine_lock.extras(root, name)
    theirs = engine_lock.extras(tree, upstream_name)
    view = View(root, upstream_name, name, [e for e in theirs if e not in kept])
    taken = [e for e in theirs if e in kept]
    incoming = {}
    for path in engine_lock.managed(tree, upstream_name, taken):
        ours = view.path(path)
        incoming[ours] = view.content((tree / path).read_bytes(), ours)
    zones = tuple(z + "/" for z in engine_lock.zones(name, kept))
    based = {p for p in lock["files"] if p.startswith(zones) or p in incoming}  # a deleted extra's stay deleted
    fates = {}
    for path in sorted(set(incoming) | based):
        current = (root / path).read_bytes() if (root / path).is_file() else None
        fates[path] = decide(current, incoming.get(path), lock["files"].get(path))
    return fates, incoming, view


def by_hand(tree: Path, base_ref: str | None, commit: str, view: View) -> list[str] | None:
    """The files upstream changed since the base outside its zones (configs, docs, the project zone, ...), as
    paths here; None when the base commit is unknown."""
    if base_ref is None:
        return None
    try:
        changed = git("diff", "--name-only", base_ref, commit, cwd=tree).split()
    except Refused:
        return None
    name = view.upstream_name
    zones = tuple(z + "/" for z in engine_lock.zones(name, engine_lock.extras(tree, name)))
    handled = {f"src/{name}/extras/__init__.py", "pyproject.toml"}  # taken above
    return sorted(view.path(p) for p in changed if not p.startswith(zones) and p not in handled)


def dirty(root: Path, paths: list[str]) -> list[str]:
    """The files of ``paths`` with uncommitted changes (none outside a git repository)."""
    try:
        return git("status", "--porcelain", "--", *paths, cwd=root).splitlines()
    except Refused:
        return []


def apply(
    root: Path, fates: dict[str, str], incoming: dict[str, bytes], resolved: set[str], lock: dict[str, str]
) -> dict[str, str]:
    """Write what the fates say; returns the new lock's ``path -> hash`` (``lock``: the base's)."""
    files = {}
    for path, fate in fates.items():
        target, new = root / path, incoming.get(path)
        if fate in ("updated", "new"):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(new)
        elif fate == "removed":
            target.unlink()
        elif fate == "conflict" and path not in resolved and new is not None:
            target.with_name(target.name + ".upstream").write_bytes(new)
        if new is not None and (fate != "conflict" or path in resolved):
            files[path] = engine_lock.digest(new)
        elif fate in ("conflict", "kept", "deleted") and path in lock:
            files[path] = lock[path]  # still the base: the conflict stays one until it is resolved
    return files


def report(fates: dict[str, str], resolved: set[str], applied: bool, upstream_files: str) -> int:
    """Print the table; returns the number of unresolved conflicts."""
    conflicts = 0
    for fate in TITLES:
        for path in (p for p, f in fates.items() if f == fate):
            if fate == "conflict" and path in resolved:
                print(f"  {'resolved':<28} {path}  (upstream's version is the new base)")
            elif fate == "conflict":
                conflicts += 1
                beside = f"upstream's is beside it: {path}.upstream" if applied else upstream_files
                print(f"  {'conflict':<28} {path}: changed here and upstream; yours is kept, {beside}")
            else:
                print(f"  {TITLES[fate]:<28} {path}")
    same = sum(f == "same" for f in fates.values())
    print(f"  {same} file{'s' * (same != 1)} already as upstream has {'them' if same != 1 else 'it'}")
    return conflicts


def base_lock(root: Path, tree: Path, base: str | None) -> dict:
    """The lock, or one made from upstream at ``--base`` (a clone that never ran ``make rename``)."""
    lock = engine_lock.read(root)
    if lock is not None and base is None:
        return lock
    if base is None:
        raise Refused(f"no {engine_lock.LOCK} here (make rename writes it): name the commit you cloned with --base")
    commit = resolve(base, tree, f"--base {base} is not a commit of upstream")
    git("checkout", "--quiet", "--detach", commit, cwd=tree)
    _, incoming, _ = plan(root, tree, {"files": {}})
    return {"ref": commit, "files": {p: engine_lock.digest(b) for p, b in incoming.items()}}


def base_pyproject(tree: Path, base: str | None, view: View) -> str | None:
    """Upstream's pyproject.toml at the base, seen here; None where the base is not one of upstream's commits."""
    try:
        return view.text(git("show", f"{base}:pyproject.toml", cwd=tree)) if base else None
    except Refused:
        return None


def update(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    with tempfile.TemporaryDirectory(prefix="update-engine-") as tmp:
        tree = Path(tmp) / "upstream"
        commit = fetch(args.upstream, args.ref, tree)
        lock = base_lock(root, tree, args.base)
        git("checkout", "--quiet", "--detach", commit, cwd=tree)
        fates, incoming, view = plan(root, tree, lock)
        resolved = {p for p in args.resolved if fates.get(p) == "conflict"}
        unknown = sorted(set(args.resolved) - resolved)
        if unknown:
            raise Refused(f"--resolved {unknown[0]}: not a conflicting file of this update")
        changed = [p for p, f in fates.items() if f not in ("same", "kept", "deleted")]
        if args.apply and dirty(root, [*changed, "pyproject.toml", engine_lock.LOCK]):
            raise Refused("uncommitted changes in the files this would write: commit them first, so git can undo it")
        base = lock.get("ref")
        print(f"update-engine: {args.upstream} at {args.ref} ({commit[:12]}), base {base[:12] if base else 'unknown'}")
        conflicts = report(
            fates, resolved, args.apply, f"see it with: git -C {args.upstream} show {commit[:12]}:<path>"
        )
        pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
        before = base_pyproject(tree, base, view)
        upstream_pyproject = view.text((tree / "pyproject.toml").read_text(encoding="utf-8"))
        pyproject = update_deps.take(pyproject, before, upstream_pyproject, args.apply)
        hand = by_hand(tree, base, commit, view)
        if hand is None:
            print("  the base commit is unknown: compare upstream's configs and docs by hand")
        elif hand:
            print(f"  upstream also changed, yours to take by hand: {', '.join(hand)}")
        if not args.apply:
            print("dry run: nothing written. To write it: make update-engine UPSTREAM=... REF=... APPLY=1 (or --apply)")
            if args.test_command == DEFAULT_TESTS:
                print(f"  --apply then runs {DEFAULT_TESTS}, {DEFAULT_TESTS_DO} ('--test_command \"\"' for none)")
            return 1 if conflicts else 0
        files = apply(root, fates, incoming, resolved, lock["files"])
        (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
        engine_lock.write(root, commit, files)
    print(f"applied; {engine_lock.LOCK} now records {commit[:12]}. Review with git diff, then commit.")
    if conflicts:
        print(f"{conflicts} left in conflict: merge each <file>.upstream by hand, then rerun with --resolved <file>")
    if args.test_command:
        does = f", which {DEFAULT_TESTS_DO}" if args.test_command == DEFAULT_TESTS else ""
        print(f"running {args.test_command}{does}")
        if subprocess.run(shlex.split(args.test_command), cwd=root).returncode != 0:
            print(
                "update-engine: the tests failed after the update. Nothing is committed: git diff shows the update, "
                "and git checkout -- <file> (git clean for new files) undoes a file; or fix it and commit."
            )
            return 1
    return 1 if conflicts else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make update-engine UPSTREAM=<url or path> REF=<ref>", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--upstream", required=True, help="The template's git repository: a URL or a path.")
    parser.add_argument("--ref", default="HEAD", help="The tag, branch or commit to take (default: upstream's HEAD).")
    parser.add_argument("--apply", action="store_true", help="Write the update (default: a dry run that prints it).")
    parser.add_argument("--resolved", nargs="*", default=[], help="Conflicting files you merged by hand.")
    parser.add_argument("--base", default=None, help="Upstream's commit this clone came from, where there is no lock.")
    parser.add_argument(
        "--test_command",
        default=DEFAULT_TESTS,
        help=f"Run after --apply ('' for none); {DEFAULT_TESTS} {DEFAULT_TESTS_DO}.",
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="The repository to update (default: this one).")
    try:
        return update(parser.parse_args(argv))
    except Refused as refused:
        print(f"update-engine: {refused}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
