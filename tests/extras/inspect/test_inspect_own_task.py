"""``inspect`` under a task defined outside the library (``tests/examples/my_task.py``), named as a project names
its own: by a config, by ``--model``, or by the ``configs/default.yaml`` of the folder it runs in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from litstarter.extras.inspect.command import main
from litstarter.extras.inspect.fit_config import default_task, parse_fit_config, with_defaults
from tests.helpers import DEFAULT_CONFIG, FOLDER_CONFIG, make_image_folder

OWN = "tests.examples.my_task.FocalClassifier"
LIBRARY_DEFAULT = "litstarter.tasks.classification.ImageClassifier"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return make_image_folder(tmp_path_factory.mktemp("own_task") / "photos", {"cat": 8, "dog": 4}, colours="distinct")


def write_config(path: Path, class_path: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"model:\n  class_path: {class_path}\n  init_args:\n    gamma: 3.0\n", encoding="utf-8")
    return path


def test_the_default_task_is_what_the_folders_default_config_names(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_task() == LIBRARY_DEFAULT  # no configs/default.yaml here: the task that says it is its config's
    write_config(tmp_path / "configs" / "default.yaml", OWN)
    assert default_task() == OWN
    assert with_defaults(["--data.root", "x"])[:2] == ["--model", OWN]
    given = with_defaults(["--model", LIBRARY_DEFAULT, "--data.root", "x"])  # a task on the command line wins
    assert given.count("--model") == 1 and given[given.index("--model") + 1] == LIBRARY_DEFAULT


def test_a_config_and_model_name_the_task_of_ones_own(folder: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path / "task.yaml", OWN)
    configs = ["--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), "--config", str(config)]
    by_config = parse_fit_config([*configs, "--data.root", str(folder)])
    by_model = parse_fit_config(["--model", OWN, "--model.gamma", "3.0", "--data.root", str(folder)])
    for config in (by_config, by_model):
        assert config.model.class_path == OWN and config.model.init_args.gamma == 3.0


def test_inspect_reports_a_folder_under_the_project_default_task(folder: Path, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path / "configs" / "default.yaml", OWN)
    cache = f"--data.init_args.cache_dir={tmp_path / 'cache'}"
    code = main(["--data.root", str(folder), cache, "--model.gamma", "1.5", "--json"])  # gamma: FocalClassifier's
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert sum(n for split in report["images"].values() for n in split.values()) == 12
