"""configs/schema.json, what editors complete and check configs with (``make schema``; docs/make_it_yours.md): it is
what the code gives, every config under configs/ and a fit's config.yaml validate against it, each task module's task
is in it, and a mistake is refused naming the key to fix."""

from __future__ import annotations

import copy
import importlib
import inspect
import json
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft7Validator
from jsonschema.exceptions import ValidationError, best_match

from litstarter.tasks.base import ImageTask
from scripts.config_schema import SCHEMA, VERSIONS, build, stale
from tests.helpers import REPO
from tests.test_configs import ALL_CONFIGS


@pytest.fixture(scope="module")
def validator() -> Draft7Validator:
    schema = json.loads(SCHEMA.read_text())
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema)


def refusal(validator: Draft7Validator, config: dict) -> ValidationError | None:
    """The error an editor shows first for ``config`` (None: it validates)."""
    return best_match(validator.iter_errors(config))


@pytest.fixture(scope="module")
def generated() -> dict:
    """The schema the code gives now (what ``make schema`` would write)."""
    schema, unreadable = build()
    assert not unreadable, unreadable
    return schema


def test_the_committed_schema_is_what_make_schema_writes(generated: dict) -> None:
    assert not stale(json.loads(SCHEMA.read_text()), generated), "configs/schema.json is stale: run `make schema`"


def test_with_other_library_versions_only_the_projects_part_must_match(generated: dict) -> None:
    other = copy.deepcopy(generated)
    other[VERSIONS]["torch"] = "0.0.0"
    other["properties"]["trainer"]["properties"]["max_epochs"]["description"] = "another release's doc"
    assert not stale(other, generated)
    other["definitions"]["litstarter.data.digits.DigitsDataModule"]["properties"].pop("seed")
    assert stale(other, generated)


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
        assert refusal(validator, config) is None, f"{task.__qualname__} is not in configs/schema.json: run make schema"


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
