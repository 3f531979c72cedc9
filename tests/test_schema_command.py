"""``litstarter schema`` in a project ``litstarter new`` writes: the schema holds the project's own classes (its task
and a callback of its own under src/, a class only a config names) beside the library's; every config the project
has validates against it (configs/search.yaml, a tune search space, by its searched keys), and a mistyped key is
refused naming it. A file it cannot write or a config that does not parse is one line, and nothing is written.

Each project's schema is built once (a few seconds each) and shared by the module's tests."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft7Validator
from jsonschema.exceptions import ValidationError, best_match

from litstarter.__main__ import main
from litstarter.new import answers, parse_extras, render
from tests.helpers import REPO

# Each generates a project (copier, git) and runs it in a process of its own: the whole suite's, not the edit loop's.
pytestmark = pytest.mark.slow

#: The projects written, with their extras (tune: a search space among the configs).
PROJECTS = {"classification": "deploy,tune", "detection": ""}
TASK_CLASSES = {"classification": "ImageClassifier", "detection": "ObjectDetector"}
#: A callback of the project's own, under its package: the schema finds it by walking src/.
OWN_CALLBACK = '''"""A callback of the project's own."""

from lightning.pytorch.callbacks import Callback


class LogEvery(Callback):
    """Logs every ``every`` steps."""

    def __init__(self, every: int = 10) -> None:
        self.every = every
'''
#: A class outside src/ that only a config names (as an installed package's would be): importable, never walked.
OUTSIDE = '''"""Callbacks from elsewhere."""

from lightning.pytorch.callbacks import Callback


class Beep(Callback):
    """Beeps."""

    def __init__(self, volume: float = 1.0) -> None:
        self.volume = volume
'''


@dataclass
class Written:
    """A project, what ``litstarter schema`` printed in it, and a validator of the schema it wrote."""

    root: Path
    package: str
    printed: str
    warned: str
    validator: Draft7Validator


def litstarter(*args: str, cwd: Path) -> tuple[int, str, str]:
    """``litstarter ARGS`` in this process (no second import of torch), in ``cwd``: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        patch.chdir(cwd)
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def write_project(root: Path, task: str) -> Path:
    """A project for ``task`` (its package ``schema_<task>``: unlike test_new's, so that each imports from its own
    src/ in one process), with a callback of its own and a config naming it and a class from outside src/."""
    package = f"schema_{task}"
    target = root / package
    render(target, answers(target, task, parse_extras(PROJECTS[task], task), package, REPO.as_uri()))
    (target / "src" / package / "callbacks.py").write_text(OWN_CALLBACK)
    own = [
        {"class_path": f"{package}.callbacks.LogEvery", "init_args": {"every": 5}},
        {"class_path": f"beeps_{task}.Beep", "init_args": {"volume": 0.5}},
    ]
    head = "# yaml-language-server: $schema=schema.json\n"
    head += "# litstarter fit --config configs/default.yaml --config configs/own.yaml\n"
    (target / "configs" / "own.yaml").write_text(head + yaml.safe_dump({"trainer": {"callbacks+": own}}))
    return target


#: ``litstarter schema`` in each ``[folder, args]`` given as JSON, in one process of its own: the projects' packages
#: it imports (a second ``ImageClassifier`` among ImageTask's subclasses) stay out of this one, where a bare
#: ``--model.help=ImageClassifier`` would turn ambiguous. One process: torch and Lightning import once.
DRIVER = """
import contextlib, io, json, os, sys
from litstarter.__main__ import main
ran = []
for folder, args in json.loads(sys.argv[1]):
    os.chdir(folder)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    ran.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(ran))
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, int, str, str]]:
    """``litstarter schema`` run in each project of :data:`PROJECTS` (by name: its task), and once more in the
    classification project on a config naming a class that does not import (``typo``): folder, exit code, stdout,
    stderr."""
    root = tmp_path_factory.mktemp("schema_projects")
    outside = root / "outside_parts"  # importable, as an installed package's module is
    outside.mkdir()
    for task in PROJECTS:
        (outside / f"beeps_{task}.py").write_text(OUTSIDE)
    folders = {task: write_project(root, task) for task in PROJECTS}
    typo = root / "typo.yaml"
    typo.write_text(yaml.safe_dump({"model": {"class_path": "schema_classification.tasks.ImageClassifier"}}))
    commands = [[str(folders[task]), ["schema"]] for task in PROJECTS]
    commands.append(
        [str(folders["classification"]), ["schema", "--out", str(root / "typo.json"), "--config", str(typo)]]
    )
    path = [str(outside), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(commands)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ran = json.loads(done.stdout.splitlines()[-1])
    return {
        name: (Path(folder), *result)
        for name, (folder, _), result in zip([*PROJECTS, "typo"], commands, ran, strict=True)
    }


@pytest.fixture(scope="module")
def projects(runs) -> dict[str, Written]:
    """Each project of :data:`PROJECTS`, its schema written by ``litstarter schema`` run in its folder."""
    written = {}
    for task in PROJECTS:
        folder, code, printed, warned = runs[task]
        assert code == 0, warned
        schema = json.loads((folder / "configs" / "schema.json").read_text())
        Draft7Validator.check_schema(schema)
        written[task] = Written(folder, f"schema_{task}", printed, warned, Draft7Validator(schema))
    return written


def refusal(validator: Draft7Validator, config: object) -> ValidationError | None:
    """The error an editor shows first for ``config`` (None: it validates)."""
    return best_match(validator.iter_errors(config))


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def nested(dotted: str, value: object) -> dict:
    """``{"a": {"b": value}}`` for ``a.b``: a searched key as a config states it."""
    for key in reversed(dotted.split(".")):
        value = {key: value}
    return value


@pytest.mark.parametrize("task", PROJECTS)
def test_it_says_in_one_line_what_it_wrote_and_how_many_classes_it_covers(task: str, projects) -> None:
    written = projects[task]
    assert written.printed.count("\n") == 1, written.printed
    assert written.printed.startswith("litstarter schema: wrote configs/schema.json: "), written.printed
    # The project's task and callback under src/, and the class only its own.yaml names.
    assert f"3 of them the project's own (schema_{task}, beeps_{task})" in written.printed, written.printed


@pytest.mark.parametrize("task", PROJECTS)
def test_every_config_the_project_has_validates(task: str, projects) -> None:
    written = projects[task]
    configs = {p.name: load(p) for p in sorted((written.root / "configs").glob("*.yaml"))}
    assert {"default.yaml", "image_folder.yaml", "own.yaml"} <= set(configs), sorted(configs)
    configs.pop("search.yaml", None)  # a search space: below
    # image_folder.yaml composes on default.yaml and wants --data.root: given here as a config would give it.
    configs["image_folder.yaml"]["data"]["init_args"]["root"] = "/data/pets"
    for name, config in configs.items():
        error = refusal(written.validator, config)
        assert error is None, f"configs/{name}: {error.json_path}: {error.message[:300]}"


def test_a_search_spaces_keys_are_keys_the_schema_takes(projects) -> None:
    written = projects["classification"]
    space = load(written.root / "configs" / "search.yaml")
    assert space["params"], space
    for key, spec in space["params"].items():
        value = spec["low"] if "low" in spec else spec["choices"][0]
        error = refusal(written.validator, nested(key, value))
        assert error is None, f"search.yaml's {key}: {error.json_path}: {error.message[:300]}"
    assert refusal(written.validator, nested("model.dropuot", 0.1)) is not None


@pytest.mark.parametrize("task", PROJECTS)
def test_a_mistyped_key_is_refused_naming_it(task: str, projects) -> None:
    written = projects[task]
    config = load(written.root / "configs" / "default.yaml")
    assert config["model"]["class_path"] == f"{written.package}.task.{TASK_CLASSES[task]}"
    mistyped = copy.deepcopy(config)
    mistyped["model"]["init_args"]["dropuot"] = 0.2
    error = refusal(written.validator, mistyped)
    assert error is not None, "model.init_args.dropuot validates"
    assert (error.json_path, "'dropuot' was unexpected" in error.message) == ("$.model.init_args", True), (
        f"{error.json_path}: {error.message[:300]}"
    )


@pytest.mark.parametrize("task", PROJECTS)
def test_the_projects_own_classes_are_checked_as_the_librarys_are(task: str, projects) -> None:
    written, package = projects[task], projects[task].package
    unknown = {"model": {"class_path": f"{package}.task.Nope"}}
    assert refusal(written.validator, unknown).json_path == "$.model.class_path"
    callback = {"class_path": f"{package}.callbacks.LogEvery", "init_args": {"evry": 5}}
    error = refusal(written.validator, {"trainer": {"callbacks": [callback]}})
    assert error is not None and "'evry' was unexpected" in error.message, error and error.message[:300]
    beep = {"class_path": f"beeps_{task}.Beep", "init_args": {"volume": "loud"}}
    error = refusal(written.validator, {"trainer": {"callbacks": [beep]}})
    assert error is not None and error.json_path.endswith("init_args.volume"), error and error.json_path


def test_a_class_a_config_names_that_does_not_import_is_left_out_saying_so(runs) -> None:
    folder, code, _, warned = runs["typo"]
    assert code == 0, warned
    typo, out = folder.parent / "typo.yaml", folder.parent / "typo.json"
    assert f"{typo} names schema_classification.tasks.ImageClassifier, left out of the schema" in warned, warned
    validator = Draft7Validator(json.loads(out.read_text()))
    assert refusal(validator, load(typo)).json_path == "$.model.class_path"  # its package is known: checked


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--out", "afile/schema.json"], "--out: cannot write 'afile/schema.json': afile is not writable"),
        (["--out", "configs"], "--out: 'configs' is a folder: name the file to write"),
        (["--config", "configs/broken.yaml"], "'configs/broken.yaml' does not parse as YAML at line 3"),
        (["--config", "configs/absent.yaml"], "--config: cannot read 'configs/absent.yaml'"),
    ],
    ids=["unwritable", "a-folder", "unparsable-config", "missing-config"],
)
def test_bad_input_is_one_line_and_nothing_is_written(args: list[str], says: str, tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "broken.yaml").write_text("model:\n  init_args: [1,\n")
    (tmp_path / "afile").write_text("not a folder")
    before = sorted(tmp_path.rglob("*"))
    code, printed, warned = litstarter("schema", *args, cwd=tmp_path)
    assert (code, printed) == (2, ""), printed
    assert warned.count("\n") == 1 and warned.startswith("litstarter schema: error: ") and says in warned, warned
    assert sorted(tmp_path.rglob("*")) == before


def test_outside_a_project_it_asks_for_one(tmp_path: Path) -> None:
    code, _, warned = litstarter("schema", cwd=tmp_path)
    assert code == 2 and "no configs/ folder here: run litstarter schema in a project's folder" in warned, warned
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("task", PROJECTS)
def test_the_projects_configs_point_at_it_and_git_ignores_it(task: str, projects) -> None:
    written = projects[task]
    for name in ("default.yaml", "image_folder.yaml"):
        first = (written.root / "configs" / name).read_text().splitlines()[0]
        assert first == "# yaml-language-server: $schema=schema.json", f"configs/{name}: {first}"
    if (written.root / "configs" / "search.yaml").exists():  # a search space: the fit schema would flag every key
        assert "yaml-language-server" not in (written.root / "configs" / "search.yaml").read_text()
    ignored = subprocess.run(["git", "check-ignore", "configs/schema.json"], cwd=written.root, capture_output=True)
    assert ignored.returncode == 0, "the project's .gitignore does not list configs/schema.json"
    makefile = (written.root / "Makefile").read_text()
    assert "\nschema: install ## Write configs/schema.json" in makefile
    assert "\n\t$(BIN)/litstarter schema\n" in makefile
    assert "`make schema` writes `configs/schema.json`" in (written.root / "README.md").read_text()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_schema_in_a_new_project_writes_it_as_its_owner_runs_it(tmp_path: Path) -> None:
    from tests.e2e.test_generated_projects import make_env

    target = tmp_path / "shop"
    render(target, answers(target, "segmentation", [], "shop", REPO.as_uri()))
    done = subprocess.run(["make", "schema"], cwd=target, env=make_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "litstarter schema: wrote configs/schema.json: " in done.stdout, done.stdout
    assert "1 of them the project's own (shop)" in done.stdout, done.stdout
    validator = Draft7Validator(json.loads((target / "configs" / "schema.json").read_text()))
    assert refusal(validator, load(target / "configs" / "default.yaml")) is None
    status = subprocess.run(["git", "status", "--porcelain"], cwd=target, capture_output=True, text=True).stdout
    assert status == "", f"make schema left the tree unclean (litstarter update refuses it): {status}"
