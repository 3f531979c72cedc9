"""Run folders are claimed atomically: racing claimers never get the same folder; only global rank 0 claims."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest
from jsonargparse import Namespace

from litstarter._engine.run import claim as run_claim


def _claim(root: str, queue) -> None:
    queue.put(run_claim.claim_next_version(Path(root)).name)


def test_racing_processes_each_get_their_own_version(tmp_path: Path) -> None:
    (tmp_path / "version_3").mkdir()  # numbering continues above what exists
    (tmp_path / "version_x").mkdir()  # not a version
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_claim, args=(str(tmp_path), queue)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    names = sorted(queue.get(timeout=5) for _ in procs)
    assert names == [f"version_{n}" for n in range(4, 10)]


@pytest.mark.parametrize(
    ("env", "rank"),
    [
        ({}, None),
        ({"RANK": "0", "LOCAL_RANK": "0"}, 0),
        ({"RANK": "3", "LOCAL_RANK": "1"}, 3),
        ({"LOCAL_RANK": "1", "NODE_RANK": "0"}, 1),  # a process Lightning's launcher re-ran
        ({"NODE_RANK": "1"}, 1),  # node 1 of a hand-launched multi-node run
        ({"NODE_RANK": "0", "LOCAL_RANK": "0"}, 0),
        ({"SLURM_PROCID": "2", "SLURM_NTASKS": "4"}, 2),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, None),  # an interactive allocation: one task
    ],
)
def test_global_rank_from_env(env: dict, rank: int | None) -> None:
    assert run_claim.global_rank_from_env(env) == rank


def _config(save_dir: Path, version=None) -> Namespace:
    init_args = Namespace(save_dir=str(save_dir), name="digits", version=version)
    logger = Namespace(class_path="lightning.pytorch.loggers.TensorBoardLogger", init_args=init_args)
    return Namespace(trainer=Namespace(logger=logger))


def test_claim_sets_the_version_and_only_rank_zero_claims(tmp_path: Path, monkeypatch) -> None:
    for name in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID", run_claim.CLAIM_ENV):
        monkeypatch.delenv(name, raising=False)
    config = _config(tmp_path)
    claimed = run_claim.claim_run_directory(config)
    assert claimed == tmp_path / "digits" / "version_0" and claimed.is_dir()
    assert config.trainer.logger.init_args.version == "version_0"
    # A process the launcher re-ran inherits the folder instead of claiming version_1.
    monkeypatch.setenv("LOCAL_RANK", "1")
    rerun = _config(tmp_path)
    assert run_claim.claim_run_directory(rerun) == claimed
    assert rerun.trainer.logger.init_args.version == "version_0"
    # A rank > 0 of an external launcher (no inherited folder) claims nothing.
    run_claim.end_claim()
    monkeypatch.setenv("RANK", "1")
    other = _config(tmp_path)
    assert run_claim.claim_run_directory(other) is None and other.trainer.logger.init_args.version is None
    assert sorted(p.name for p in (tmp_path / "digits").iterdir()) == []  # the unused claim was removed
    # A set version (a resume, tune) is left alone.
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("LOCAL_RANK")
    fixed = _config(tmp_path, version="version_7")
    assert run_claim.claim_run_directory(fixed) is None and fixed.trainer.logger.init_args.version == "version_7"
