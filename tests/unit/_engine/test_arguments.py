"""The extras' parser: a mistake is one UsageError line, an option is never taken from its prefix."""

from __future__ import annotations

import pytest

from litstarter._engine.arguments import ArgumentParser
from litstarter.errors import UsageError


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="litstarter report")
    p.add_argument("--model", required=True)
    p.add_argument("--topk", type=int, default=1)
    return p


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--mod", "m.onnx"], "--mod: no such option (did you mean --model?)"),  # a prefix, argparse would take it
        (["--model", "m.onnx", "--topkk", "3"], "--topkk: no such option (did you mean --topk?)"),
        (["--model", "m.onnx", "--zzz"], "--zzz: no such option (litstarter report --help lists them)"),
        (["--model", "m.onnx", "--topk", "many"], "argument --topk: invalid int value: 'many'"),
        ([], "the following arguments are required: --model"),
    ],
)
def test_a_mistake_is_one_usage_error_naming_the_option(argv: list[str], said: str, capsys) -> None:
    with pytest.raises(UsageError) as refused:
        parser().parse_args(argv)
    assert str(refused.value) == said
    assert capsys.readouterr().err == ""  # no usage block


def test_good_arguments_parse() -> None:
    assert parser().parse_args(["--model=m.onnx", "--topk", "3"]).topk == 3
