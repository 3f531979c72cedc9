"""A real DDP fit from the shards, two CPU processes (gloo): every epoch the ranks train disjoint samples, in equal
steps, that together cover the train split once, less the ``drop_last`` remainder that docs/data.md describes."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from litstarter.data import StreamingDataModule
from litstarter.errors import UsageError
from tests.extras.streaming.test_optimize import stream_eval_view
from tests.extras.streaming.test_streaming_data import stream_fit_args
from tests.helpers import free_port, launcher_env, run_litstarter

# 40 train samples: 10 batches of 2 per rank, none dropped. The eval splits (4 samples each) allow batches of 2 at
# most on 2 ranks (see the refusal's test below).
EPOCHS, BATCH = 2, 2


def stored_ids_by_view(output: Path) -> dict[str, str]:
    """``{sha1 of the eval view: stored sample id}`` over the train split (the views are distinct images)."""
    import hashlib

    from litdata import StreamingDataset

    images, _ = stream_eval_view(output, "train")
    stored = StreamingDataset(str(output / "train"))
    ids = {hashlib.sha1(image.tobytes()).hexdigest(): stored[i]["id"] for i, image in enumerate(images)}
    assert len(ids) == len(stored) == 40
    return ids


@pytest.mark.slow
def test_a_ddp_fit_gives_the_ranks_disjoint_equal_shares_that_cover_the_split(converted, tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    record = "--trainer.callbacks+=tests.extras.streaming.recording.RecordRankViews"
    args = stream_fit_args(tmp_path, converted["output"], EPOCHS, "--trainer.strategy=ddp", "--trainer.devices=2",
                           "--trainer.accelerator=cpu", f"--data.batch_size={BATCH}", "--data.augmentation=null",
                           "--test_after_fit=false", record, f"--trainer.callbacks.out_dir={probe}")  # fmt: skip
    run_litstarter(args, timeout=240, env=launcher_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port())))
    ids = stored_ids_by_view(converted["output"])
    per_rank = (len(ids) // BATCH) // 2  # LitData under DDP: whole batches only, as many on every rank
    orders = []
    for epoch in range(EPOCHS):
        records = [json.loads((probe / f"rank{r}_epoch{epoch}.json").read_text()) for r in (0, 1)]
        assert [r["world_size"] for r in records] == [2, 2]
        assert [r["steps"] for r in records] == [per_rank, per_rank], epoch
        shares = [[ids[h] for h in r["hashes"]] for r in records]  # a KeyError: a view that is no stored sample
        assert [len(s) for s in shares] == [per_rank * BATCH] * 2 and all(len(set(s)) == len(s) for s in shares)
        assert not set(shares[0]) & set(shares[1]), epoch
        assert len(set(shares[0]) | set(shares[1])) == len(ids) - len(ids) % (2 * BATCH), epoch
        orders.append(shares)
    assert orders[0] != orders[1]  # LitData reshuffles every epoch


def test_an_eval_split_under_one_batch_per_rank_is_refused_in_one_line(converted) -> None:
    """LitData deals whole batches to the ranks and the remainder to the last: 4 val samples in batches of 3 on 2
    ranks leave rank 0 none, which Lightning refuses with a traceback ("zero length")."""
    data = StreamingDataModule(str(converted["output"]), num_workers=0, batch_size=3)
    data.trainer = SimpleNamespace(world_size=2)
    with pytest.raises(UsageError, match=r"the val split has 4 samples.*2 ranks.*needs data.batch_size <= 2"):
        data.setup("fit")
    data = StreamingDataModule(str(converted["output"]), num_workers=0, batch_size=2)
    data.trainer = SimpleNamespace(world_size=2)
    data.setup("fit")  # 2 x 2 = 4: one batch each
