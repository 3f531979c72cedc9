"""``litstarter tune`` without training: the search-space file, bad input before any trial, the trial budget,
trials of dead workers, and the study's report files. The sweeps themselves are in tests/e2e/test_tune.py."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml

from litstarter.__main__ import main as litstarter_main
from litstarter.errors import UsageError
from litstarter.extras.tune.command import run_trials, split_overrides
from litstarter.extras.tune.report import best_config, trial_error, write_trials_csv
from litstarter.extras.tune.search_space import load_search_space
from litstarter.extras.tune.storage import WORKER_ATTR, fail_trials_of_dead_workers, open_storage, this_worker
from tests.extras.tune.helpers import tune_args
from tests.helpers import CONFIGS, DEFAULT_CONFIG, free_port

SEARCH_FILES = sorted((CONFIGS / "search").glob("*.yaml"))
GOOD = "objective: {metric: val/acc}\nparams:\n  model.dropout: {type: float, low: 0.0, high: 0.5}\n"


def write(tmp_path: Path, text: str, name: str = "space.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("path", SEARCH_FILES, ids=lambda p: p.name)
def test_every_search_file_loads_and_opens_with_its_command(path: Path, monkeypatch) -> None:
    monkeypatch.chdir(CONFIGS.parent)  # config choices are relative to the repository root
    space = load_search_space(path)
    assert space.params and space.metric in ("val/acc", "val/map")  # classification's, detection's
    assert any(
        "litstarter tune" in line and str(path.relative_to(CONFIGS.parent)) in line
        for line in path.read_text().splitlines()[:3]
    )


def test_default_search_space_searches_the_four_knobs() -> None:
    names = {p.name for p in load_search_space(CONFIGS / "search" / "default.yaml").params}
    assert names == {
        "model.optimizer.init_args.lr",
        "model.optimizer.init_args.weight_decay",
        "model.dropout",
        "model.label_smoothing",
    }


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("model.dropout: {type: float, low: 0.5, high: 0.1}", "params.model.dropout: empty range"),
        ("model.dropout: {type: float, low: 0.2, high: 0.2}", "empty range"),
        ("model.dropout: {type: categorical, choices: []}", "params.model.dropout: empty choices"),
        ("model.optimizer.init_args.lr: {type: float, low: 0, high: 1, log: true}", "log: true needs low > 0"),
        ("model.dropout: {type: normal, low: 0, high: 1}", "type float, int or categorical"),
        ("model.dropout: {type: float, low: 0, high: 1, lgo: true}", "unknown field(s) ['lgo']"),
        ("model.dropout: {type: int, low: 0.5, high: 3}", "expected an integer"),
        ("opt: {type: categorical, configs: [configs/model/nope.yaml]}", "not found"),
    ],
)
def test_a_bad_distribution_is_one_line_naming_the_file_and_key(tmp_path: Path, params: str, message: str) -> None:
    path = write(tmp_path, f"objective: {{metric: val/acc}}\nparams:\n  {params}\n")
    with pytest.raises(UsageError) as info:
        load_search_space(path)
    assert message in str(info.value) and str(path) in str(info.value) and "\n" not in str(info.value)


def test_yaml_exponents_without_a_dot_are_numbers(tmp_path: Path) -> None:
    # YAML 1.1 reads `1e-4` as a string; users write it anyway.
    space = load_search_space(
        write(tmp_path, "objective: {metric: val/acc}\nparams:\n  a.b: {type: float, low: 1e-4, high: 1e-2}\n")
    )
    assert space.params[0].distribution.low == 1e-4


def test_sampler_is_seeded_per_trial_number(tmp_path: Path) -> None:
    space = load_search_space(write(tmp_path, GOOD + "sampler: {name: random, seed: 7}\n"))

    def draw(number: int) -> float:
        study = optuna.create_study(sampler=space.make_sampler(number))
        return study.ask().suggest_float("x", 0, 1)

    assert draw(3) == draw(3) and draw(3) != draw(4)


def test_overrides_take_both_forms_and_refuse_a_checkpoint() -> None:
    tokens, values = split_overrides(["--trainer.max_epochs", "3", "--model.dropout=0.2"])
    assert tokens == ["--trainer.max_epochs=3", "--model.dropout=0.2"] and values == {
        "trainer.max_epochs": 3,
        "model.dropout": 0.2,
    }
    with pytest.raises(UsageError, match="--ckpt_path"):
        split_overrides(["--ckpt_path=x.ckpt"])


@pytest.mark.parametrize(
    ("params", "extra", "message"),
    [
        (
            "model.optimizer.init_args.lrr: {type: float, low: 1.0e-4, high: 1.0e-2, log: true}",
            [],
            "params.model.optimizer.init_args.lrr is not a config key",
        ),
        ("model.dropout: {type: float, low: 0.5, high: 0.5}", [], "params.model.dropout: empty range"),
        ("trainer.max_epochs: {type: categorical, choices: [2, many]}", [], "many"),
        (
            "model.dropout: {type: float, low: 0.0, high: 0.5}",
            ["--storage", "postgresql+psycopg://u:secret@127.0.0.1:{port}/x"],
            "cannot open the database",
        ),
        ("model.dropout: {type: float, low: 0.0, high: 0.5}", ["--storage", "nonsense"], "expected a SQLAlchemy URL"),
    ],
    ids=["unknown key", "empty range", "bad choice", "unreachable storage", "not a url"],
)
def test_bad_input_fails_before_any_trial_in_one_line(
    tmp_path: Path, capsys, params: str, extra: list[str], message: str
) -> None:
    search = write(tmp_path, f"objective: {{metric: val/acc}}\nparams:\n  {params}\n")
    extra = [e.format(port=free_port()) for e in extra]
    # --trials 1, 1 epoch: should a check ever let bad input through, the test stays short
    assert litstarter_main(tune_args(tmp_path, search, "--trials", "1", "--trainer.limit_train_batches=2", *extra)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("litstarter tune: error: ") and message in err[-1], err
    assert "secret" not in err[-1] and "Traceback" not in "\n".join(err)
    assert not (tmp_path / "digits").exists(), "no study folder, no trial, before the input is right"


def journal_study(tmp_path: Path, name: str = "s") -> optuna.Study:
    storage = open_storage(None, tmp_path)
    return optuna.create_study(study_name=name, storage=storage, load_if_exists=True, direction="maximize")


def test_a_trial_left_running_by_a_dead_worker_is_marked_fail_on_resume(tmp_path: Path) -> None:
    study = journal_study(tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    orphan, live = study.ask(), study.ask()
    orphan.set_user_attr(WORKER_ATTR, {**this_worker(), "pid": dead.pid, "started": None})
    live.set_user_attr(WORKER_ATTR, this_worker())
    resumed = journal_study(tmp_path)  # another process would read the same journal
    assert fail_trials_of_dead_workers(resumed) == [orphan.number]
    states = {t.number: t.state for t in resumed.get_trials()}
    assert states == {orphan.number: optuna.trial.TrialState.FAIL, live.number: optuna.trial.TrialState.RUNNING}
    assert "stopped before the trial ended" in trial_error(resumed.get_trials()[orphan.number])


def test_trials_count_every_state_and_a_rerun_continues_the_study(tmp_path: Path) -> None:
    calls = []

    def objective(trial: optuna.Trial) -> float:
        calls.append(trial.number)
        if trial.number == 1:
            raise optuna.TrialPruned()
        return float(trial.number)

    study = journal_study(tmp_path)
    study.ask()  # a running trial (another worker's) counts too
    run_trials(study, objective, 3, tmp_path)
    assert calls == [1, 2] and len(study.get_trials()) == 3
    run_trials(journal_study(tmp_path), objective, 3, tmp_path)  # the same command again: nothing left to do
    run_trials(journal_study(tmp_path), objective, 4, tmp_path)  # --trials 4: one more
    assert calls == [1, 2, 3]
    rows = (tmp_path / "trials.csv").read_text().splitlines()
    assert rows[0].startswith("number,state,value") and [r.split(",")[1] for r in rows[1:]] == [
        "RUNNING",
        "PRUNED",
        "COMPLETE",
        "COMPLETE",
    ]


def test_best_config_composes_chosen_files_then_overrides_then_tuned_keys(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(CONFIGS.parent)
    space = load_search_space(CONFIGS / "search" / "optimizer.yaml")
    study = optuna.create_study(direction="maximize")
    trial = study.ask()
    trial.suggest_categorical("optimizer", ["configs/optim/adamw.yaml", "configs/optim/sgd_nesterov.yaml"])
    for param in space.params[1:]:
        trial.suggest_float(param.name, param.distribution.low, param.distribution.high, log=True)
    study.tell(trial, 0.9)
    frozen = study.best_trial
    config = best_config(space, frozen, {"trainer.max_epochs": 5})
    text = yaml.safe_dump(config)
    assert config["trainer"]["max_epochs"] == 5
    assert config["model"]["optimizer"]["class_path"] in ("torch.optim.AdamW", "torch.optim.SGD")
    assert config["model"]["optimizer"]["init_args"]["lr"] == frozen.params["model.optimizer.init_args.lr"], text


def test_trials_csv_names_each_trials_error(tmp_path: Path) -> None:
    study = optuna.create_study()
    trial = study.ask()
    trial.set_user_attr("error", "ValueError: Invalid learning rate: -1.0")
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    with open(write_trials_csv(study, tmp_path / "trials.csv"), newline="") as f:
        (row,) = csv.DictReader(f)
    assert row["state"] == "FAIL" and row["value"] == "" and row["error"] == "ValueError: Invalid learning rate: -1.0"


def test_the_search_space_shown_in_the_docs_loads(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(CONFIGS.parent)
    block = (CONFIGS.parent / "docs" / "tune.md").read_text().split("```yaml\n", 1)[1].split("```", 1)[0]
    space = load_search_space(write(tmp_path, block))
    assert {p.name for p in space.params} >= {"model.optimizer.init_args.lr", "optimizer"}


def test_tune_with_mlflow_missing_or_a_bad_study_name_stops_before_any_trial(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    search = write(tmp_path, GOOD)
    assert litstarter_main(tune_args(tmp_path, search, "--study_name", "a/b")) == 2
    assert "--study_name 'a/b'" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if the extra were not installed
    monkeypatch.chdir(tmp_path)
    args = [
        "tune",
        "--config",
        str(DEFAULT_CONFIG),
        "--config",
        str(CONFIGS / "logger" / "all.yaml"),
        "--search",
        str(search),
    ]
    assert litstarter_main(args) == 2
    assert "mlflow is not installed: pip install -e '.[mlflow]'" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "digits").exists()
