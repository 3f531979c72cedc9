"""``--resume``: which run and checkpoint it picks, what it refuses, and the hold on a run folder that a second fit
cannot take while the first lives, and can once it is gone (SIGKILL too). Also the line naming what a checkpoint's
settings overrule."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from jsonargparse import Namespace

from litstarter._engine.run import claim as run_claim
from litstarter._engine.run.checkpoint_settings import overruled, say_what_the_checkpoint_overrules
from litstarter._engine.run.resume import choose_run, differences, resolve_resume, run_checkpoint
from litstarter.errors import UsageError

TB = "lightning.pytorch.loggers.TensorBoardLogger"


@pytest.fixture(autouse=True)
def _no_inherited_runs(monkeypatch):
    for name in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID", run_claim.CLAIM_ENV, run_claim.RESUME_ENV):
        monkeypatch.delenv(name, raising=False)
    yield
    run_claim.end_claim()


def _config(save_dir: Path, version=None, resume=None, **model) -> Namespace:
    init_args = Namespace(save_dir=str(save_dir), name="digits", version=version)
    logger = Namespace(class_path=TB, init_args=init_args)
    return Namespace(trainer=Namespace(logger=logger), resume=resume, ckpt_path=None, model=Namespace(**model))


def _checkpoint(path: Path, mtime: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"ckpt")
    os.utime(path, (mtime, mtime))
    return path


def test_auto_picks_the_run_with_the_newest_checkpoint_and_a_run_its_newest_save(tmp_path: Path, caplog) -> None:
    root = tmp_path / "digits"
    _checkpoint(root / "version_0" / "checkpoints" / "last.ckpt", 300)
    newest = _checkpoint(root / "version_1" / "checkpoints" / "last.ckpt", 400)
    (root / "version_2" / "checkpoints").mkdir(parents=True)  # a run that died before its first epoch ended
    assert choose_run("auto", _config(tmp_path)) == (root / "version_1", newest)
    hpc = _checkpoint(root / "version_1" / "hpc_ckpt_1.ckpt", 500)  # a SLURM save after the last epoch end
    assert run_checkpoint(root / "version_1") == hpc
    # With the version set (the SLURM script's job folder), only that run is looked at.
    assert choose_run("auto", _config(tmp_path, version="version_0"))[0] == root / "version_0"
    assert choose_run("auto", _config(tmp_path, version="version_2")) is None
    assert choose_run("auto", _config(tmp_path / "elsewhere")) is None
    fresh = [r.getMessage() for r in caplog.records if "starting a fresh run" in r.getMessage()]
    assert len(fresh) == 2 and str(tmp_path / "elsewhere" / "digits") in fresh[1]
    with pytest.raises(UsageError, match="holds nothing to resume from"):
        choose_run(str(root / "version_2"), _config(tmp_path))
    with pytest.raises(UsageError, match="is not a run folder"):
        choose_run(str(root / "version_9"), _config(tmp_path))


def test_shaping_settings_are_refused_and_trainer_ones_reported() -> None:
    run = {
        "model": {"backbone": "small_cnn", "compile": False},
        "data": {"init_args": {"classes": None}},
        "trainer": {"max_epochs": 3, "logger": {"a": 1}},
        "seed_everything": 42,
    }
    ours = {
        "model": {"backbone": "resnet18", "compile": True},
        "data": {"init_args": {"classes": [0, 1]}},
        "trainer": {"max_epochs": 5, "logger": {"a": 2}},
        "seed_everything": 42,
    }
    shaping, trainer = differences(ours, run)
    assert shaping == [
        "data.init_args.classes: None in the run, [0, 1] now",
        "model.backbone: 'small_cnn' in the run, 'resnet18' now",
    ]  # model.compile may change: how the work is done, not what is learnt
    assert trainer == ["trainer.max_epochs: 3 in the run, 5 now"]  # trainer.logger is where the run writes
    assert differences({**run, "seed_everything": True}, run) == ([], [])  # a drawn seed is the run's own


def test_resolve_refuses_a_changed_run_and_holds_an_agreeing_one(tmp_path: Path) -> None:
    run = tmp_path / "digits" / "version_0"
    ckpt = _checkpoint(run / "checkpoints" / "last.ckpt", 100)
    saved = {"model": {"backbone": "small_cnn"}, "trainer": {"max_epochs": 3}}
    (run / "config.yaml").write_text(yaml.safe_dump(saved))
    changed = {"model": {"backbone": "resnet18"}, "trainer": {"max_epochs": 3}}
    with pytest.raises(UsageError, match=r"model\.backbone: 'small_cnn' in the run, 'resnet18' now"):
        resolve_resume("fit", _config(tmp_path, resume="auto"), changed)
    assert not (run / run_claim.LOCK_FILE).exists(), "a refused resume writes nothing into the run"
    with pytest.raises(UsageError, match="--resume is for fit"):
        resolve_resume("test", _config(tmp_path, resume="auto"), saved)
    given = _config(tmp_path, resume="auto")
    resume = resolve_resume("fit", given, {**saved, "trainer": {"max_epochs": 5}})
    assert given.ckpt_path == str(ckpt) and resume.changed == ["trainer.max_epochs: 3 in the run, 5 now"]
    assert run_claim.inherited_resume() is None  # this process chose it; its launcher's re-runs inherit it
    fresh = _config(tmp_path / "none", resume="auto")
    assert resolve_resume("fit", fresh, saved) is None and fresh.resume is None  # config.yaml won't say resume


HOLD = """
import os, sys, time
from litstarter._engine.run import claim
claim.hold_run(sys.argv[1])
worker = os.fork()  # a data loader worker: it outlives a SIGKILLed parent until it notices
if worker == 0:
    time.sleep(60)
    os._exit(0)
print("held", worker, flush=True)
time.sleep(60)
"""


def test_a_held_run_is_refused_naming_the_holder_and_free_again_once_it_is_killed(tmp_path: Path) -> None:
    run = tmp_path / "version_0"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True, env=env)
    said, worker = holder.stdout.readline().split()
    try:
        assert said == "held"
        with pytest.raises(run_claim.RunHeldError, match=f"process {holder.pid} on "):
            run_claim.hold_run(run)
        holder.kill()  # SIGKILL: no cleanup runs, the kernel drops the lock; its forked worker lives on
        holder.wait(10)
        deadline = time.monotonic() + 10
        while True:
            try:
                run_claim.hold_run(run)
                break
            except run_claim.RunHeldError:
                assert time.monotonic() < deadline, "the killed fit's surviving worker still holds the run"
                time.sleep(0.05)
        os.kill(int(worker), 0)  # the worker is still alive: the run was freed by the parent's death alone
        assert (run / run_claim.LOCK_FILE).is_file()
    finally:
        holder.kill()
        holder.wait(10)
        run_claim.release_runs()
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(worker), signal.SIGKILL)


def test_the_settings_a_checkpoint_overrules_are_named_and_fit_refuses_another_architecture(caplog) -> None:
    hparams = {
        "backbone": "small_cnn",
        "dropout": 0.1,
        "num_classes": 10,
        "_instantiator": "x",
        "optimizer": {"class_path": "torch.optim.AdamW", "init_args": {"lr": 0.003, "betas": (0.9, 0.999)}},
    }
    given = {"backbone": "resnet18", "dropout": 0.1, "optimizer": {"init_args": {"lr": 0.01}}}
    assert overruled(given, hparams) == [
        ("model.backbone", "resnet18", "small_cnn"),
        ("model.optimizer.init_args.lr", 0.01, 0.003),
    ]
    say_what_the_checkpoint_overrules("test", given, hparams, "a.ckpt")
    (line,) = [r.getMessage() for r in caplog.records]
    assert "model.backbone: resnet18 in your config, small_cnn in the checkpoint" in line
    assert line.endswith("using the checkpoint's")
    with pytest.raises(UsageError, match="another architecture: model.backbone: resnet18"):
        say_what_the_checkpoint_overrules("fit", given, hparams, "a.ckpt")
    say_what_the_checkpoint_overrules("fit", {"dropout": 0.1}, hparams, "a.ckpt")  # nothing overruled: silent
    assert len(caplog.records) == 1


def test_other_ranks_follow_rank_zero_and_never_hold(tmp_path: Path, monkeypatch) -> None:
    run = tmp_path / "digits" / "version_0"
    ckpt = _checkpoint(run / "checkpoints" / "last.ckpt", 100)
    other = _checkpoint(tmp_path / "digits" / "version_1" / "checkpoints" / "last.ckpt", 200)
    # A process Lightning's launcher re-ran (another device) inherits rank 0's choice, even with a newer run about.
    monkeypatch.setenv(run_claim.RESUME_ENV, f'["{run}", "{ckpt}"]')
    monkeypatch.setenv("LOCAL_RANK", "1")
    given = _config(tmp_path, resume="auto")
    assert resolve_resume("fit", given, {}).run_dir == run and given.ckpt_path == str(ckpt)
    # A rank > 0 of another launcher chooses by the same rule, and holds nothing.
    monkeypatch.delenv(run_claim.RESUME_ENV)
    monkeypatch.setenv("RANK", "1")
    given = _config(tmp_path, resume="auto")
    assert resolve_resume("fit", given, {}).ckpt == other and not run_claim._held
    assert not (other.parent.parent / run_claim.LOCK_FILE).exists()
