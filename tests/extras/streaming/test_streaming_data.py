"""``data: StreamingDataModule``: a fit from the shards, the same views whatever the loader workers, one line for a
sampler, two ranks' shares, and an exact mid-epoch resume from the ``last.ckpt`` the template writes after every
validation: the same batches and the same final metrics as the uninterrupted fit."""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
from collections import Counter
from pathlib import Path

import pytest
import torch

from litstarter.cli import main
from litstarter.data import StreamingDataModule
from litstarter.errors import UsageError
from litstarter.tasks.classification import ImageClassifier
from tests.extras.streaming.recording import KillAt, RecordSamples, records
from tests.helpers import fast_fit_args, run_cli


def stream_fit_args(save_dir: Path, output: Path, epochs: int = 2, *extra: str) -> list[str]:
    """A short fit from the shards, batches of 4 (10 per epoch), no loader workers."""
    return [*fast_fit_args(save_dir, epochs=epochs, name="stream"), "--data", "litstarter.data.StreamingDataModule",
            f"--data.root={output}", "--data.num_workers=0", "--data.batch_size=4", "--baseline=false",
            "--trainer.enable_progress_bar=false", *extra]  # fmt: skip


def test_a_sampler_is_refused_in_one_line_naming_class_weights(converted) -> None:
    with pytest.raises(UsageError, match="cannot apply to a stream.*model.class_weights auto"):
        StreamingDataModule(str(converted["output"]), sampler="balanced")


def epoch_views(data: StreamingDataModule, epochs: int = 2, **spawn) -> list[list[bytes]]:
    """Each epoch's training views, in order, through the module's train loader (or, with ``spawn``, the same
    loader with its workers started by spawn: every object it sends them is pickled)."""
    from litdata import StreamingDataLoader

    data.setup("fit")
    loader = data.train_dataloader()
    if spawn:
        loader = StreamingDataLoader(data.train_set, batch_size=data.batch_size, collate_fn=loader.collate_fn, **spawn)
    return [[image.numpy().tobytes() for images, _ in loader for image in images] for _ in range(epochs)]


@pytest.mark.slow
def test_the_views_are_the_same_run_after_run_and_with_spawned_workers(converted) -> None:
    root = str(converted["output"])
    first, again = (epoch_views(StreamingDataModule(root, num_workers=0, batch_size=8)) for _ in range(2))
    assert first == again  # the same order and the same augmented views, epoch after epoch
    assert first[0] != first[1] and len(set(first[0])) == len(first[0]) == 40
    forked = epoch_views(StreamingDataModule(root, num_workers=2, batch_size=8))
    for epoch, views in enumerate(forked):  # another order (two workers' shares), the same view of every sample
        assert Counter(views) == Counter(first[epoch]), epoch
    spawned = epoch_views(StreamingDataModule(root, batch_size=8), 2, num_workers=2, multiprocessing_context="spawn",
                          persistent_workers=True)  # fmt: skip
    assert [Counter(views) for views in spawned] == [Counter(views) for views in first]  # kept workers follow
    # An epoch cut short (limit_train_batches) never ends in the kept workers (small batches: they are not done
    # prefetching it), yet the next epoch is the loader's second.
    data = StreamingDataModule(root, num_workers=2, batch_size=2)
    data.setup("fit")
    loader = data.train_dataloader()
    assert loader.persistent_workers
    next(itertools.islice(loader, 2, None))  # three batches of epoch 0, then the loader is left
    assert Counter(image.numpy().tobytes() for images, _ in loader for image in images) == Counter(first[1])


@pytest.mark.slow
def test_a_short_fit_from_the_shards_tests_and_reloads(converted, tmp_path: Path) -> None:
    run_cli(stream_fit_args(tmp_path, converted["output"]))
    run = tmp_path / "stream" / "version_0"
    assert (run / "metrics.json").is_file()
    model = ImageClassifier.load_from_checkpoint(run / "checkpoints" / "last.ckpt", map_location="cpu")
    assert model.hparams.class_names == ["0", "1", "2", "3"] and tuple(model.hparams.resize_size) == (27, 27)
    loops = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["loops"]["fit_loop"]
    (state,) = loops["state_dict"]["combined_loader"]  # the StreamingDataLoader's own state, saved by Lightning
    assert state["dataset"]["input_dir_path"] == str(converted["output"] / "train") and state["current_epoch"] == 2


def fit_killed_mid_epoch(args: list[str], seen: Path) -> int:
    """``fit ARGS`` in a forked child of this process (no second start-up), recording its samples, SIGKILLed at the
    start of batch 4 of epoch 1; returns the signal that ended it."""
    pid = os.fork()
    if pid == 0:  # the child: nothing runs after the kill, not even pytest's teardown
        try:
            torch.set_num_threads(1)  # as a loader worker does: no thread pool inherited across the fork
            main(args, callbacks=[RecordSamples(seen), KillAt(epoch=1, batch=4)])
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0


@pytest.mark.slow
def test_a_mid_epoch_resume_continues_with_the_next_batch_as_the_uninterrupted_fit(
    converted, tmp_path: Path, caplog
) -> None:
    seen = tmp_path / "seen.txt"
    args = stream_fit_args(tmp_path, converted["output"], 2, "--trainer.val_check_interval=0.25")
    assert fit_killed_mid_epoch(args, seen) == signal.SIGKILL
    before = records(seen)
    # Validation (and last.ckpt) after every 2 batches: the kill at batch 4 of epoch 1 follows the one after batch 3.
    assert Counter(e for e, _ in before) == {0: 40, 1: 16}
    last = tmp_path / "stream" / "version_0" / "checkpoints" / "last.ckpt"
    with caplog.at_level(logging.INFO, logger="litstarter"):
        main([*args, f"--ckpt_path={last}"], callbacks=[RecordSamples(seen)])
    assert "had trained 4 of its 10 batches" in caplog.text and "continues with batch 5" in caplog.text
    after = records(seen)[len(before) :]
    assert {e for e, _ in after} == {1}
    epoch_1 = [h for e, h in before + after if e == 1]
    assert len(epoch_1) == len(set(epoch_1)) == 40  # 40 views, none twice
    # The same fit, uninterrupted: the same samples in the same order and views (a view is a function of the sample
    # and LitData's epoch, so this also shows that none was replayed or skipped), and the same final metrics.
    whole = tmp_path / "whole.txt"
    main(stream_fit_args(tmp_path / "whole", converted["output"], 2, "--trainer.val_check_interval=0.25"),
         callbacks=[RecordSamples(whole)])  # fmt: skip
    assert [h for e, h in records(whole) if e == 1] == epoch_1
    resumed, uninterrupted = (json.loads(next(root.rglob("metrics.json")).read_text()) for root in
                              (tmp_path / "stream", tmp_path / "whole"))  # fmt: skip
    assert {k: v for k, v in resumed.items() if k.startswith("test/")} == {
        k: v for k, v in uninterrupted.items() if k.startswith("test/")
    }  # the same final metrics, to the last digit
    # and the same final weights (dropout's masks too), whichever checkpoint the test took
    weights = [torch.load(root / "version_0" / "checkpoints" / "last.ckpt", weights_only=True)["state_dict"]
               for root in (tmp_path / "stream", tmp_path / "whole" / "stream")]  # fmt: skip
    assert all(torch.equal(weights[0][key], weights[1][key]) for key in weights[0])


def test_two_ranks_stream_disjoint_shares_of_equal_steps_that_cover_the_split(converted, monkeypatch) -> None:
    """Two DDP ranks, simulated in this process (LitData reads its rank from ``_DistributedEnv.detect()``): not a
    DDP fit, but the split the streaming module's train loader gives each rank."""
    from litdata.streaming import dataset as litdata_dataset
    from litdata.utilities.env import _DistributedEnv

    shares, steps = [], []
    for rank in (0, 1):
        env = _DistributedEnv(world_size=2, global_rank=rank, num_nodes=1)
        monkeypatch.setattr(litdata_dataset._DistributedEnv, "detect", classmethod(lambda cls, env=env: env))
        data = StreamingDataModule(str(converted["output"]), num_workers=0, batch_size=4, augmentation=None)
        data.setup("fit")
        batches = list(data.train_dataloader())
        steps.append(len(batches))
        shares.append([image.numpy().tobytes() for images, _ in batches for image in images])
    assert steps[0] == steps[1] == 5
    assert not set(shares[0]) & set(shares[1])
    assert len(set(shares[0]) | set(shares[1])) == 40  # the whole train split, once
