"""``litstarter new``: what it refuses (one line, nothing written), and the project it writes: the task copied out
of the library unchanged, importing public names only, defining its loss and its four steps, small enough to read in
one sitting. The generated projects' own fits and tests run in tests/e2e/test_generated_projects.py."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from litstarter.new import TASKS, answers, parse_extras, render
from scripts.template_tasks import MODULES, copy_path
from tests.in_project import run_jobs

# Each generates a project (copier, git) and runs it in a process of its own: the whole suite's, not the edit loop's.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
#: The most lines of Python (src/ and tests/) a generated project may hold: read in one sitting.
MOST_LINES = {"classification": 600, "detection": 900}
STEPS = ("training_step", "validation_step", "test_step", "predict_step")
#: Each task's library configs, composed on configs/default.yaml: what a project's configs/default.yaml is.
LIBRARY_CONFIGS = {
    "classification": [],
    "multilabel": ["data/digit_sets.yaml", "task/multilabel.yaml"],
    "regression": ["data/digit_counts.yaml", "task/regression.yaml"],
    "segmentation": ["data/digit_segmentation.yaml", "task/segmentation.yaml"],
    "detection": ["data/digit_boxes.yaml", "task/detection.yaml"],
}


def new(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``litstarter new ARGS`` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "litstarter", "new", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> dict[str, Path]:
    """One project per task, with every extra that ships a file (deploy, tune)."""
    root = tmp_path_factory.mktemp("projects")
    made = {}
    for task in TASKS:
        target = root / f"proj_{task}"
        render(target, answers(target, task, parse_extras("deploy,tune", task), f"proj_{task}", REPO.as_uri()))
        made[task] = target
    return made


@pytest.mark.parametrize("task", sorted(MODULES))
def test_the_templates_task_is_the_library_module_byte_for_byte(task: str) -> None:
    module = REPO / "src" / "litstarter" / "tasks" / MODULES[task]
    assert copy_path(task).read_bytes() == module.read_bytes(), (
        f"the template's copy of {module.name} drifted from the library's: python scripts/template_tasks.py"
    )


@pytest.mark.parametrize("task", sorted(TASKS))
def test_task_py_defines_its_four_steps_imports_public_names_only_and_subclasses_image_task(task, projects) -> None:
    package = projects[task] / "src" / f"proj_{task}"
    tree = ast.parse((package / "task.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            assert not any(part.startswith("_") for part in (node.module or "").split(".")), node.module
            assert not any(alias.name.startswith("_") for alias in node.names), ast.unparse(node)
        if isinstance(node, ast.Import):
            assert not any(p.startswith("_") for a in node.names for p in a.name.split(".")), ast.unparse(node)
    (task_class,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and "ImageTask" in map(ast.unparse, n.bases)]
    defined = {n.name: n for n in task_class.body if isinstance(n, ast.FunctionDef)}
    assert set(STEPS) <= set(defined), f"{task}: task.py lacks {set(STEPS) - set(defined)}"
    for step in STEPS:  # its own step, not the base's
        calls = [ast.unparse(n) for n in ast.walk(defined[step]) if isinstance(n, ast.Call)]
        assert not any(c.startswith(f"super().{step}(") for c in calls), f"{task}: {step} calls super()'s"


@pytest.mark.parametrize("task", sorted(TASKS))
def test_a_project_is_read_in_one_sitting(task: str, projects) -> None:
    files = sorted((projects[task] / "src").rglob("*.py")) + sorted((projects[task] / "tests").rglob("*.py"))
    lines = {str(f.relative_to(projects[task])): len(f.read_text().splitlines()) for f in files}
    assert sum(lines.values()) <= MOST_LINES.get(task, 900), lines
    top = {p.name for p in projects[task].iterdir()}
    assert {"src", "configs", "tests", "notebooks", ".github", "pyproject.toml", "README.md", "Makefile"} <= top
    assert {p.name for p in (projects[task] / "configs").iterdir()} == {
        "default.yaml",
        "image_folder.yaml",
        "search.yaml",
    }


def test_the_project_imports_its_task_and_its_configs_name_it(projects, resolved) -> None:
    assert resolved["bases"][:2] == ["ImageTask", "LightningModule"]  # the public base, not the library's task
    config = (projects["regression"] / "configs" / "default.yaml").read_text()
    assert "class_path: proj_regression.task.ImageRegressor" in config
    assert "class_path: litstarter.data.DigitCountsDataModule" in config


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["taken"], "'taken' exists and is not an empty folder: litstarter new writes a new project"),
        (["fresh", "--task", "clasification"], "--task: unknown task 'clasification' (choose from classification,"),
        (["fresh", "--extras", "deploy,serv"], "--extras: unknown extra 'serv' (choose from deploy, serve,"),
        (["my-torch", "--name", "torch"], "project name 'torch' would shadow the importable package 'torch'"),
        (["json"], "project name 'json' would shadow the importable package 'json'"),
        (["tests"], "project name 'tests' would shadow"),
        (["2fast"], "project name '2fast' is not a Python identifier"),
    ],
)
def test_a_bad_request_is_refused_in_one_line_and_nothing_is_written(args, says, tmp_path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    done = new(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and says in done.stderr, done.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_the_answers_record_where_the_library_came_from_and_a_compatible_range(projects) -> None:
    recorded = (projects["classification"] / ".copier-answers.yml").read_text()
    assert f"litstarter_source: {REPO.as_uri()}" in recorded and "task: classification" in recorded
    from litstarter import __version__

    major, minor = (int(p) for p in __version__.split(".")[:2])
    pyproject = (projects["classification"] / "pyproject.toml").read_text()
    assert f'"litstarter[deploy,tune]>={major}.{minor},<{major}.{minor + 1}"' in pyproject
    assert (
        f"litstarter[deploy,detection,tune]>={major}.{minor}" in (projects["detection"] / "pyproject.toml").read_text()
    )


@pytest.fixture(scope="module")
def resolved(projects) -> dict:
    """In a process of its own (tests/in_project.py): the config each project's default.yaml resolves to and the
    one the library's configs for its task resolve to, less what names the run (the task's class path, the logger's
    name); and the bases of the regression project's task."""
    jobs = [
        {"src": str(projects["regression"] / "src"), "mode": "task", "args": ["proj_regression.task.ImageRegressor"]}
    ]
    for task in sorted(TASKS):
        library = [REPO / "configs" / "default.yaml", *(REPO / "configs" / c for c in LIBRARY_CONFIGS[task])]
        for args in (["--config", str(projects[task] / "configs" / "default.yaml")],
                     [a for c in library for a in ("--config", str(c))]):  # fmt: skip
            jobs.append({"src": str(projects[task] / "src"), "mode": "config", "args": args})
    bases, *configs = run_jobs(jobs)
    for config in configs:
        config["model"].pop("class_path")
        config["trainer"]["logger"]["init_args"].pop("name")
    return {"bases": bases, **{task: configs[2 * i : 2 * i + 2] for i, task in enumerate(sorted(TASKS))}}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_a_projects_default_config_is_the_librarys_composition_for_its_task(task: str, resolved: dict) -> None:
    ours, library = resolved[task]
    assert ours == library
