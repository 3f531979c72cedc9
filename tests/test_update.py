"""``litstarter update``: a project written at one template release takes the next through copier, offline. An
owner's edits survive where the template changed other lines; the same lines changed on both sides leave copier's
conflict markers, named in one line; an unclean tree is refused and nothing changes. And the library's
``template.bundle`` holds the template of this release, beside every earlier one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from litstarter import __version__
from litstarter._engine.project_git import git, template_bundle
from litstarter.errors import UsageError
from litstarter.new import answers, render
from litstarter.update import update
from scripts.template_bundle import TEMPLATE, releases, write_bundle

# Each generates a project (copier, git) and runs it in a process of its own: the whole suite's, not the edit loop's.
pytestmark = pytest.mark.slow

TASK_PY = "{% if task == 'classification' %}task.py{% endif %}"
CONFIG = Path("project", "configs", "default.yaml.jinja")


def tagged(repo: Path, tag: str) -> None:
    git(repo, "add", "--all")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", tag)
    git(repo, "tag", tag)


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} in {path}"
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """The library's template as a repository tagged v1, and v2: one docstring line of the task and the early
    stopping patience of the config changed."""
    repo = tmp_path_factory.mktemp("template") / "repo"
    shutil.copytree(TEMPLATE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "--quiet", "--initial-branch", "main")
    tagged(repo, "v1")
    task = repo / "project" / "src" / "{{ package }}" / TASK_PY
    first = task.read_text().splitlines()[0]
    replace_in(task, first + "\n", first.replace('"""', '"""[v2] ', 1) + "\n")
    replace_in(repo / CONFIG, "        patience: 10\n", "        patience: 8\n")
    tagged(repo, "v2")
    return repo


def project_at_v1(root: Path, template: Path, name: str = "shop") -> Path:
    target = root / name
    render(target, answers(target, "classification", [], name, "file:///nowhere"), template=template, ref="v1")
    return target


def owner_commits(project: Path, message: str = "mine") -> None:
    git(project, "add", "--all")
    git(project, "-c", "user.name=o", "-c", "user.email=o@o", "commit", "--quiet", "-m", message)


def test_an_owners_edits_survive_where_the_template_changed_other_lines(template: Path, tmp_path: Path) -> None:
    project = project_at_v1(tmp_path, template)
    task, config = project / "src" / "shop" / "task.py", project / "configs" / "default.yaml"
    replace_in(task, "return self.criterion(logits, targets)", "return 2.0 * self.criterion(logits, targets)")
    replace_in(config, "    dropout: 0.1\n", "    dropout: 0.25  # mine\n")
    owner_commits(project)
    mine = {path: path.read_bytes() for path in (task, config)}
    line = update(project, template=template, ref="v2")
    assert line.startswith("litstarter update: v1 -> v2, 3 file(s) changed"), line
    assert task.read_text().startswith('"""[v2] ') and "        patience: 8\n" in config.read_text()
    replaced_by_v2 = {task: [mine[task].splitlines()[0]], config: [b"        patience: 10"]}
    for path, before in mine.items():  # of what the owner had, only the lines v2 changed are gone
        after = path.read_bytes().splitlines()
        assert [x for x in before.splitlines() if x not in after] == replaced_by_v2[path]
    assert b"return 2.0 * self.criterion(logits, targets)" in task.read_bytes()
    assert b"    dropout: 0.25  # mine\n" in config.read_bytes()
    assert "_commit: v2" in (project / ".copier-answers.yml").read_text()


def test_the_same_lines_changed_on_both_sides_leave_conflict_markers_named_in_one_line(template, tmp_path) -> None:
    project = project_at_v1(tmp_path, template)
    config = project / "configs" / "default.yaml"
    replace_in(config, "        patience: 10\n", "        patience: 20\n")
    owner_commits(project)
    line = update(project, template=template, ref="v2")
    assert line.startswith("litstarter update: v1 -> v2 with conflicts in configs/default.yaml:"), line
    assert "\n" not in line
    text = config.read_text()
    assert "<<<<<<< before updating\n        patience: 20\n=======\n        patience: 8\n>>>>>>> after updating" in text


def test_an_unclean_tree_is_refused_in_one_line_and_nothing_changes(template: Path, tmp_path: Path) -> None:
    project = project_at_v1(tmp_path, template)
    (project / "configs" / "default.yaml").write_text("edited, not committed\n")
    (project / "notes.txt").write_text("new")
    files = {p: p.read_bytes() for p in project.rglob("*") if p.is_file() and ".git" not in p.parts}
    head = git(project, "rev-parse", "HEAD")
    with pytest.raises(UsageError, match=r"has uncommitted changes \(configs/default.yaml, notes.txt\): commit or"):
        update(project, template=template, ref="v2")
    assert {p: p.read_bytes() for p in files} == files and git(project, "rev-parse", "HEAD") == head


def test_a_stale_template_source_is_rewritten_to_the_one_given(template: Path, tmp_path: Path) -> None:
    moved = tmp_path / "old_venv_template"
    shutil.copytree(template, moved)
    project = project_at_v1(tmp_path, moved)
    shutil.rmtree(moved)  # the library the project was written with is gone
    line = update(project, template=template, ref="v2")
    assert "v1 -> v2" in line and f"_src_path: {template}" in (project / ".copier-answers.yml").read_text()
    assert git(project, "log", "-1", "--format=%s").startswith("litstarter update: the template comes from")


def test_update_outside_a_project_says_so_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "litstarter", "update"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == f"litstarter update: error: '{tmp_path}' has no .copier-answers.yml: litstarter" \
        " update runs in a project litstarter new wrote"  # fmt: skip


def test_the_shipped_bundle_holds_this_releases_template(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(template_bundle()), str(clone))
    assert f"v{__version__}" in releases(clone)
    git(clone, "checkout", "--quiet", f"v{__version__}")
    shipped = {p.relative_to(clone): p.read_bytes() for p in clone.rglob("*") if p.is_file() and ".git" not in p.parts}
    ours = {p.relative_to(TEMPLATE): p.read_bytes() for p in TEMPLATE.rglob("*") if p.is_file()}
    assert shipped == {k: v for k, v in ours.items() if "__pycache__" not in k.parts}, (
        "src/litstarter/template.bundle is stale: python scripts/template_bundle.py"
    )


def test_a_new_release_keeps_the_earlier_ones_and_an_earlier_one_is_final(tmp_path: Path) -> None:
    bundle, template = tmp_path / "t.bundle", tmp_path / "template"
    shutil.copytree(TEMPLATE, template)
    first = write_bundle(bundle, template, "0.2.0")
    assert write_bundle(bundle, template, "0.2.0") == first  # the same template at the same release
    (template / "copier.yml").write_text((template / "copier.yml").read_text() + "# 0.3.0\n")
    write_bundle(bundle, template, "0.3.0")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(bundle), str(clone))
    assert releases(clone) == ["v0.2.0", "v0.3.0"]
    assert git(clone, "rev-parse", "v0.2.0").strip() == first and git(clone, "rev-parse", "v0.3.0^").strip() == first
    with pytest.raises(SystemExit, match="v0.2.0 is an earlier release than v0.3.0"):
        write_bundle(bundle, template, "0.2.0")


def test_the_command_updates_the_project_it_runs_in_and_exits_1_on_conflicts(template, tmp_path, monkeypatch, capsys):
    import litstarter.update as command

    project = project_at_v1(tmp_path, template)
    replace_in(project / "configs" / "default.yaml", "        patience: 10\n", "        patience: 20\n")
    owner_commits(project)
    monkeypatch.setattr(command, "template_bundle", lambda: template)  # as if the installed release were v2
    monkeypatch.setattr(command, "__version__", "2")
    monkeypatch.chdir(project)
    assert command.main([]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("litstarter update: v1 -> v2 with conflicts in configs/default.yaml")
    recorded = (project / ".copier-answers.yml").read_text()
    assert "litstarter_version: '2'" in recorded or "litstarter_version: 2" in recorded
