"""The schema ``litstarter schema`` writes in this repository (``make schema``: configs/schema.json, what editors
complete and check configs with; docs/make_it_yours.md): every config under configs/ and a fit's config.yaml
validate against it, each task module's task is in it, and a mistake is refused naming the key to fix. It is built
once, into a temporary folder (the file is not committed: nothing is stale to compare it with)."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft7Validator
from jsonschema.exceptions import ValidationError, best_match

from litstarter.__main__ import main
from litstarter.tasks.base import ImageTask
from tests.helpers import REPO
from tests.test_configs import ALL_CONFIGS


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, str]:
    """``litstarter schema --out <tmp>/schema.json`` run in this repository: the file, and what it printed."""
    out, printed = tmp_path_factory.mktemp("schema") / "schema.json", io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.chdir(REPO)
        assert main(["schema", "--out", str(out)]) == 0
    return out, printed.getvalue()


@pytest.fixture(scope="module")
def validator(written: tuple[Path, str]) -> Draft7Validator:
    schema = json.loads(written[0].read_text())
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema)


def refusal(validator: Draft7Validator, config: dict) -> ValidationError | None:
    """The error an editor shows first for ``config`` (None: it validates)."""
    return best_match(validator.iter_errors(config))


def test_it_writes_the_file_and_says_so_in_one_line(written: tuple[Path, str]) -> None:
    out, printed = written
    assert printed.count("\n") == 1 and printed.startswith(f"litstarter schema: wrote {out}: "), printed
    classes = int(printed.split(": ")[-1].split()[0])
    assert classes > 100 and "project's own" not in printed, printed  # src/ holds the library alone
    assert not list(out.parent.glob(".*.tmp")), "a temporary file was left beside it"


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_config_validates(config: Path, validator: Draft7Validator) -> None:
    error = refusal(validator, yaml.safe_load(config.read_text()) or {})
    assert error is None, f"{config.relative_to(REPO)}: {error.json_path}: {error.message}"


@pytest.mark.slow
def test_a_fits_config_yaml_validates(digits_run: Path, validator: Draft7Validator) -> None:
    error = refusal(validator, yaml.safe_load((digits_run / "config.yaml").read_text()))
    assert error is None, f"config.yaml: {error.json_path}: {error.message}"


def test_every_task_module_s_task_is_a_model_the_schema_takes(validator: Draft7Validator) -> None:
    tasks = []
    for path in sorted((REPO / "src" / "litstarter" / "tasks").glob("*.py")):
        module = importlib.import_module(f"litstarter.tasks.{path.stem}")
        tasks += [c for _, c in inspect.getmembers(module, inspect.isclass) if issubclass(c, ImageTask)]
    tasks = [task for task in dict.fromkeys(tasks) if task is not ImageTask]
    assert len(tasks) >= 2, tasks
    for task in tasks:
        config = {"model": {"class_path": f"{task.__module__}.{task.__qualname__}"}}
        assert refusal(validator, config) is None, f"{task.__qualname__} is not in the schema"


@pytest.mark.parametrize(
    ("config", "path", "named"),
    [
        ({"trainer": {"max_epoch": 3}}, "$.trainer", "'max_epoch' was unexpected"),
        ({"trainer": {"max_epochs": "ten"}}, "$.trainer.max_epochs", "'ten' is not of type 'integer'"),
        ({"model": {"class_path": "litstarter.tasks.nope.Nope"}}, "$.model.class_path", "'litstarter.tasks.nope.Nope'"),
        ({"model": {"dropot": 0.1}}, "$.model", "'dropot' was unexpected"),
        ({"model": {"optimizer": {"init_args": {"lr": "fast"}}}}, "$.model.optimizer.init_args.lr", "'fast'"),
        (
            {"data": {"init_args": {"augmentation": {"crop_scal": [0.5, 1]}}}},
            "$.data.init_args.augmentation",
            "crop_scal",
        ),
        (
            {"trainer": {"callbacks+": [{"class_path": "EarlyStopping", "init_args": {"monitr": "x"}}]}},
            "$.trainer['callbacks+'][0].init_args",
            "monitr",
        ),
        ({"test_after_fitt": False}, "$", "'test_after_fitt' was unexpected"),
    ],
    ids=[
        "typo",
        "wrong-type",
        "unknown-class",
        "task-argument-typo",
        "optimizer-type",
        "nested",
        "callback",
        "top-level",
    ],
)
def test_a_mistake_is_refused_naming_its_key(config: dict, path: str, named: str, validator: Draft7Validator) -> None:
    error = refusal(validator, config)
    assert error is not None, f"{config} validates"
    assert (error.json_path, named in error.message) == (path, True), f"{error.json_path}: {error.message[:300]}"


@pytest.mark.parametrize(
    "config",
    [
        {"model": {"class_path": "MultilabelClassifier", "init_args": {"pos_weight": "auto"}}},  # a short name
        {"model": {"class_path": "my_project.tasks.MyTask", "init_args": {"anything": 1}}},  # your own: unchecked
        {"trainer": {"logger": "CSVLogger", "strategy": "ddp", "precision": "bf16-mixed"}},
        {"model": {"optimizer": {"class_path": "torch.optim.SGD", "init_args": {"lr": 0.1, "momentum": 0.9}}}},
    ],
    ids=["short-name", "own-class", "trainer-strings", "optimizer"],
)
def test_what_the_cli_accepts_validates(config: dict, validator: Draft7Validator) -> None:
    error = refusal(validator, config)
    assert error is None, f"{error.json_path}: {error.message[:300]}"
