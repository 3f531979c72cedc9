"""``litstarter tune`` end to end: a real sweep run by two workers on one journal, its refit, pruning and failure,
and the same two-worker study on a real PostgreSQL server started from pip's ``pgserver`` wheel (or Debian's
``postgresql`` package)."""

from __future__ import annotations

import csv
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import optuna
import pytest

from tests.extras.tune.helpers import tune_args
from tests.helpers import DEFAULT_CONFIG, REPO, free_port, run_litstarter, tensorboard_events

pytestmark = pytest.mark.slow

# Short trials: the digits default learns in a few batches; the budget is about 3 s a trial on 2 cores.
SHORT = ["--data.init_args.num_workers=0", "--trainer.enable_model_summary=false"]
INSTALL_HINT = "pip install pgserver (the dev extra has it) or Debian's postgresql; as root, a postgres user too"


def short_sweep(save_dir: Path, search: Path | str, trials: int, *extra: str) -> list[str]:
    """A short ``litstarter tune`` sweep of ``trials`` trials on the digits default, writing under ``save_dir``."""
    return tune_args(save_dir, search, "--trials", str(trials), *SHORT, *extra)


def start_together(commands: list[list[str]], timeout: float = 400) -> list[subprocess.CompletedProcess]:
    """Start several ``litstarter`` processes at once and wait for all; fail with their output if one fails."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "litstarter", *c],
            cwd=REPO,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for c in commands
    ]
    results = []
    for proc, command in zip(procs, commands, strict=True):
        out, err = proc.communicate(timeout=timeout)
        results.append(subprocess.CompletedProcess(command, proc.returncode, out, err))
    for r in results:
        assert r.returncode == 0, f"worker exited {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return results


def read_trials(study_dir: Path) -> list[dict]:
    with open(study_dir / "trials.csv", newline="") as f:
        return list(csv.DictReader(f))


def assert_two_workers_ran_exactly(study: optuna.Study, n: int, results: list[subprocess.CompletedProcess]) -> None:
    trials = study.get_trials()
    assert sorted(t.number for t in trials) == list(range(n)), [t.number for t in trials]
    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    assert all(t.state in finished for t in trials), [t.state for t in trials]
    pids = {t.user_attrs["worker"]["pid"] for t in trials}
    assert len(pids) == 2, f"both workers should have run trials, got pids {pids}"
    for r in results:
        assert "Traceback" not in r.stderr and "litstarter tune: error" not in r.stderr, r.stderr[-2000:]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, list[subprocess.CompletedProcess]]:
    """The default search space, 8 trials of 2 short epochs, run by two workers started together on one journal."""
    save_dir = tmp_path_factory.mktemp("sweep")
    command = short_sweep(save_dir, REPO / "configs/search/default.yaml", 8, "--trainer.max_epochs=2")
    results = start_together([command, command])
    return save_dir / "digits" / "tune-default", results


def test_two_workers_on_one_journal_finish_exactly_n_trials(sweep) -> None:
    study_dir, results = sweep
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(study_dir / "journal.log")))
    assert_two_workers_ran_exactly(optuna.load_study(study_name="default", storage=storage), 8, results)


def test_sweep_leaves_its_files_and_each_trial_is_an_ordinary_run(sweep) -> None:
    study_dir, results = sweep
    rows = read_trials(study_dir)
    assert len(rows) == 8 and {r["state"] for r in rows} <= {"COMPLETE", "PRUNED"}
    assert {"value", "duration_s", "run_dir", "model.optimizer.init_args.lr", "model.dropout"} <= set(rows[0])
    for name in ("best.yaml", "search.yaml", "history.png", "importance.png", "journal.log"):
        assert (study_dir / name).stat().st_size > 0, name
    for row in rows:
        run = Path(row["run_dir"])
        assert run == study_dir / f"trial_{row['number']}"
        assert (run / "config.yaml").is_file() and (run / "metrics.json").is_file() == (row["state"] == "COMPLETE")
        assert list(run.glob("events.out.tfevents.*")) and (run / "checkpoints" / "last.ckpt").is_file()
    assert "study 'default': 8 trials (" in "".join(r.stdout for r in results)  # the summary, from the later worker
    assert "--trials 8" in (study_dir / "search.yaml").read_text()


def test_best_yaml_refits_the_best_trial(sweep, tmp_path: Path) -> None:
    study_dir, _ = sweep
    rows = [r for r in read_trials(study_dir) if r["state"] == "COMPLETE"]
    best = max(rows, key=lambda r: float(r["value"]))
    best_yaml = (study_dir / "best.yaml").read_text()
    assert f"trial {best['number']}," in best_yaml and "max_epochs: 2" in best_yaml  # tune's own override too
    run_litstarter(
        [
            "fit",
            "--config",
            str(DEFAULT_CONFIG),
            "--config",
            str(study_dir / "best.yaml"),
            f"--trainer.logger.init_args.save_dir={tmp_path}",
        ],
        timeout=300,
    )
    # The trial's value is its best val/acc over its validations (the objective), whichever epoch the checkpoint
    # callback kept: compare it with the refit's own best val/acc.
    refit_acc = max(e.value for e in tensorboard_events(tmp_path / "digits" / "version_0").Scalars("val/acc"))
    assert abs(refit_acc - float(best["value"])) <= 0.005, (refit_acc, best["value"])


def test_hopeless_trials_are_pruned_early_and_a_raising_trial_is_recorded_as_fail(tmp_path: Path) -> None:
    # With this seed the draws are: good, raising (a negative learning rate), hopeless, good.
    search = tmp_path / "prune.yaml"
    search.write_text(
        "objective: {metric: val/acc, direction: maximize}\n"
        "sampler: {name: random, seed: 3}\n"
        "pruner: {name: median, n_startup_trials: 1, n_warmup_steps: 0}\n"
        "params:\n"
        "  model.optimizer.init_args.lr: {type: categorical, choices: [0.003, 1.0e-7, -1.0]}\n"
    )
    proc = run_litstarter(short_sweep(tmp_path, search, 4, "--trainer.max_epochs=3", "--trainer.limit_train_batches=5"))
    rows = {r["number"]: r for r in read_trials(tmp_path / "digits" / "tune-prune")}
    states = sorted(r["state"] for r in rows.values())
    assert states == ["COMPLETE", "COMPLETE", "FAIL", "PRUNED"], rows
    (pruned,) = [r for r in rows.values() if r["state"] == "PRUNED"]
    assert float(pruned["model.optimizer.init_args.lr"]) == 1e-7 and int(pruned["epochs"]) < 3
    (failed,) = [r for r in rows.values() if r["state"] == "FAIL"]
    assert failed["error"] == "ValueError: Invalid learning rate: -1.0"
    assert "Invalid learning rate" in (Path(failed["run_dir"]) / "error.txt").read_text()
    assert all(int(r["epochs"]) == 3 for r in rows.values() if r["state"] == "COMPLETE")
    assert "Traceback" not in proc.stderr


# --- PostgreSQL -------------------------------------------------------------------------------------------------


def postgres_bin() -> Path | None:
    """The folder of PostgreSQL's server binaries (initdb, pg_ctl): pip's ``pgserver`` wheel (the dev extra installs
    it), else Debian's ``postgresql`` package, if either is installed."""
    spec = importlib.util.find_spec("pgserver")
    wheel = Path(spec.origin).parent / "pginstall" / "bin" if spec and spec.origin else None
    if wheel is not None and (wheel / "initdb").is_file():
        return wheel
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@pytest.fixture(scope="module")
def postgres_url():
    """A PostgreSQL server in a temporary folder on a loopback port, as the ``postgres`` user when run as root
    (initdb refuses root); yields its SQLAlchemy URL and stops it afterwards."""
    bindir = postgres_bin()
    if bindir is None:
        pytest.skip(f"PostgreSQL server binaries not found (pgserver, /usr/lib/postgresql/*/bin): {INSTALL_HINT}")
    as_user: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("runuser") is None or not user_exists("postgres"):
            pytest.skip(f"running as root with no `runuser` or no postgres user to start PostgreSQL as: {INSTALL_HINT}")
        as_user = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="litstarter-pg-"))
    if as_user:
        shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", free_port()

    def run(*cmd: str) -> None:
        subprocess.run([*as_user, *cmd], check=True, capture_output=True, timeout=120)

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "server.log"), "-w", "start")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(root, ignore_errors=True)


def test_two_workers_share_one_study_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    command = short_sweep(
        tmp_path,
        REPO / "configs/search/default.yaml",
        4,
        "--storage",
        postgres_url,
        "--study_name",
        "shared",
        "--trainer.max_epochs=1",
        "--trainer.limit_train_batches=5",
    )
    results = start_together([command, command])
    assert_two_workers_ran_exactly(optuna.load_study(study_name="shared", storage=postgres_url), 4, results)
    assert not (tmp_path / "digits" / "tune-shared" / "journal.log").exists()  # the database, not a journal
    assert len(read_trials(tmp_path / "digits" / "tune-shared")) == 4
