"""``litstarter new <dir> --task <task> [--extras deploy,serve]``: write a Lightning project its owner reads in one
sitting, on this library.

The project holds what its owner edits: the task's LightningModule copied out of the library
(``src/<package>/task.py``, as ``tune cp`` copies a torchtune recipe), its configs, its tests, a Makefile whose
``make train`` trains the task's embedded example offline. Everything shared stays in the library, which the
project installs by a compatible version range from where it was generated. The template is a copier template
(``litstarter/_template``), shipped as a git bundle with a tag per release (``template.bundle``): the project is
rendered at this release's tag, starts its git history with a first commit, and keeps copier's answers in
``.copier-answers.yml``, so ``litstarter update`` can bring it the template's later changes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import keyword
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from litstarter import __version__
from litstarter._engine.project_git import commit, git, template_bundle
from litstarter.errors import UsageError

#: The tasks a project can be written for (the template's ``task`` choices), and the pip extras each needs.
TASKS: dict[str, tuple[str, ...]] = {
    "classification": (),
    "multilabel": (),
    "regression": (),
    "segmentation": (),
    "detection": ("detection",),
}
#: The library's pip extras a project may choose (``dev`` and ``detection``, which a task implies, aside).
EXTRAS = ("deploy", "serve", "tune", "postgres", "mlflow", "streaming", "timm", "smp")
#: Names a project's package must not take: they would shadow its own folders or the tools it runs.
RESERVED = {"tests", "src", "configs", "notebooks", "litstarter", "test", "setup"}


def library_source() -> str:
    """Where this library was installed from, as a pip requirement's URL: its checkout (``file://``), its wheel, or
    its git URL at the commit; from the package's own location when pip recorded nothing (PEP 610)."""
    try:
        recorded = metadata.distribution("litstarter").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        recorded = None
    if recorded:
        direct = json.loads(recorded)
        vcs = direct.get("vcs_info")
        if vcs:
            return f"{vcs['vcs']}+{direct['url']}@{vcs.get('requested_revision') or vcs['commit_id']}"
        return direct["url"]
    checkout = Path(__file__).resolve().parents[2]  # src/litstarter/new.py -> the checkout
    if (checkout / "pyproject.toml").is_file():
        return checkout.as_uri()
    raise UsageError(
        f"litstarter {__version__} was installed from a package index, which records no source a project can install"
        " it from again: pass --source <checkout, wheel or git URL>"
    )


def check_name(name: str) -> None:
    """Refuse, in one line, a package name that is no identifier or would shadow something importable."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"project name '{name}' is not a Python identifier: use letters, digits and _ (--name)")
    if name in RESERVED or name in sys.stdlib_module_names or importlib.util.find_spec(name) is not None:
        raise UsageError(f"project name '{name}' would shadow the importable package '{name}': pick another (--name)")


def parse_extras(text: str, task: str) -> list[str]:
    """The extras ``--extras a,b`` names, checked, with the task's own needs added; sorted, without repeats."""
    chosen = [word.strip() for word in text.split(",") if word.strip()]
    unknown = [word for word in chosen if word not in EXTRAS]
    if unknown:
        raise UsageError(f"--extras: unknown extra {unknown[0]!r} (choose from {', '.join(EXTRAS)})")
    if "serve" in chosen and "deploy" not in chosen:
        chosen.append("deploy")  # serve answers from deploy's exports
    return sorted({*chosen, *TASKS[task]})


def answers(target: Path, task: str, extras: list[str], name: str, source: str) -> dict:
    """copier's answers: the questions of ``_template/copier.yml``."""
    return {
        "project_name": target.name,
        "package": name,
        "task": task,
        "extras": extras,
        "litstarter_version": __version__,
        "litstarter_source": source,
    }


def render(target: Path, data: dict, template: Path | None = None, ref: str | None = None) -> None:
    """Render the template at ``ref`` into a folder beside ``target``, start its git history with a first commit,
    then rename it into place: a failure leaves nothing.

    Args:
        target: The project's folder (absent or empty).
        data: copier's answers (:func:`answers`).
        template: A git-tracked template (a repository or a bundle); None: this library's ``template.bundle``.
        ref: The template's tag to render; None: this library's release, ``v<version>``.
    """
    import copier

    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    source = template or template_bundle()
    try:
        copier.run_copy(
            str(source), scratch, data=data, vcs_ref=ref or f"v{__version__}", defaults=True, quiet=True, unsafe=False
        )
        git(scratch, "init", "--quiet", "--initial-branch", "main")
        commit(scratch, f"litstarter new: a {data['task']} project on litstarter {data['litstarter_version']}")
        if target.exists():
            target.rmdir()  # empty (checked): os.rename will not replace it
        scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Write the project; every refusal is one line, and nothing is written."""
    parser = argparse.ArgumentParser(prog="litstarter new", description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="the project's folder (new, or empty)")
    parser.add_argument("--task", default="classification", help=f"what the model learns: {', '.join(TASKS)}")
    parser.add_argument("--extras", default="", help=f"optional features, comma-separated: {', '.join(EXTRAS)}")
    parser.add_argument("--name", help="the package under src/ (default: the folder's name, - and . as _)")
    source = "where the project's make install takes litstarter from (default: where this one was installed from)"
    parser.add_argument("--source", help=source)
    args = parser.parse_args(argv)
    if args.task not in TASKS:
        raise UsageError(f"--task: unknown task {args.task!r} (choose from {', '.join(TASKS)})")
    target = args.dir.resolve()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"'{args.dir}' exists and is not an empty folder: litstarter new writes a new project")
    name = args.name or target.name.replace("-", "_").replace(".", "_").lower()
    check_name(name)
    extras = parse_extras(args.extras, args.task)
    render(target, answers(target, args.task, extras, name, args.source or library_source()))
    print(f"litstarter new: wrote the {args.task} project '{name}' to {args.dir}")
    print(f"  cd {args.dir} && make train    # trains the embedded example, offline; then make test")
    return 0
