"""The Trainer's counts-or-fractions read ``1`` as one batch, whichever package built an int-or-float union first."""

from __future__ import annotations

import inspect
import typing

import lightning as L
from jsonargparse import ArgumentParser

from litstarter._engine.run.config_file import _int_before_float, keep_counts_as_ints
from litstarter.cli import LitStarterCLI
from litstarter.data.base import ArrayDataModule
from litstarter.tasks.base import ImageTask

# Built with `|`, which no cache reorders, so that the typing cache neither gives nor takes this order.
FLOAT_FIRST = float | int | None


class Limits:
    def __init__(self, limit_batches=1.0, ratio=1.0) -> None:  # None would make jsonargparse re-wrap the union
        self.limit_batches = limit_batches


# The objects themselves, not strings evaluated later (that would go through the typing cache again).
Limits.__init__.__annotations__.update(limit_batches=FLOAT_FIRST, ratio=FLOAT_FIRST)


def parser_for(prefixes: tuple[str, ...]) -> ArgumentParser:
    parser = ArgumentParser(exit_on_error=False)
    for prefix in prefixes:
        parser.add_class_arguments(Limits, prefix)
    return parser


def test_a_float_first_union_reads_an_integer_as_an_int_under_the_prefix_only() -> None:
    parser = parser_for(("trainer", "model"))
    assert parser.parse_args(["--trainer.limit_batches=1"]).trainer.limit_batches == 1.0  # the hazard, unfixed
    keep_counts_as_ints(parser)
    parsed = parser.parse_args(["--trainer.limit_batches=1", "--trainer.ratio=0.5"])
    assert type(parsed.trainer.limit_batches) is int and parsed.trainer.limit_batches == 1
    assert parsed.trainer.ratio == 0.5
    model_hints = [a._typehint for a in parser._actions if a.dest.startswith("model.")]
    assert all(hint.__args__ == (float, int, type(None)) for hint in model_hints)  # a user's own keeps its order
    assert type(parser.parse_args(["--trainer.limit_batches=1.0"]).trainer.limit_batches) is float
    assert parser.parse_args(["--trainer.limit_batches=null"]).trainer.limit_batches is None


def test_the_cli_reads_limit_batches_1_as_one_batch_when_the_trainer_was_annotated_float_first(monkeypatch) -> None:
    # Lightning's own fabric.py writes Optional[Union[float, int]]; whether the Trainer's Optional[Union[int, float]]
    # gets that cached order depends on what else was imported in between (httpx, imported first, is enough).
    annotations = inspect.unwrap(L.Trainer.__init__).__annotations__
    for key in ("limit_train_batches", "limit_val_batches", "val_check_interval"):
        monkeypatch.setitem(annotations, key, FLOAT_FIRST)
    cli = LitStarterCLI(
        ImageTask,
        ArrayDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        run=False,
        args=[
            "--config=configs/default.yaml",
            "--trainer.limit_train_batches=1",
            "--trainer.limit_val_batches=0.5",
            "--trainer.val_check_interval=1.0",
            "--trainer.logger=false",
        ],
    )
    assert type(cli.trainer.limit_train_batches) is int and cli.trainer.limit_train_batches == 1
    assert cli.trainer.limit_val_batches == 0.5
    assert type(cli.trainer.val_check_interval) is float


def test_both_spellings_of_a_float_first_union_come_back_int_first_in_the_same_members() -> None:
    spelled = (typing.Optional[typing.Union[float, int]], typing.Union[float, int, str], FLOAT_FIRST)  # noqa: UP007, UP045
    for hint in spelled:
        args = typing.get_args(_int_before_float(hint))
        assert args.index(int) < args.index(float) and set(args) == set(typing.get_args(hint))
    assert _int_before_float(typing.Optional[str]) == typing.Optional[str]  # noqa: UP007, UP045
