"""Your own backbone (a class from your module) exports and infers, with --trust_model where loading imports it;
its ONNX export is a graph and needs no trust."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.helpers import fast_fit_args, run_cli

pytestmark = pytest.mark.slow  # end to end

MINE = "tests.examples.my_backbones.TinyNet"


def _entry(args: list[str], capsys) -> tuple[int, str]:
    """``litstarter ARGS`` in this process (the entry point, errors as one line): exit code and stderr."""
    from litstarter.__main__ import main

    code = main(args)
    return code, capsys.readouterr().err


def test_your_backbone_exports_and_infers_with_trust(tmp_path: Path, capsys) -> None:
    fit = [*fast_fit_args(tmp_path, epochs=1, name="mine"), "--trainer.limit_train_batches=4", "--test_after_fit=false"]
    run_cli([*fit, f"--model.backbone={MINE}", "--model.backbone_kwargs={width: 16}"])
    ckpt = tmp_path / "mine" / "version_0" / "checkpoints" / "last.ckpt"
    export = ["export", "--ckpt_path", str(ckpt), "--out", str(tmp_path / "export"), "--formats", "weights", "onnx"]

    code, err = _entry(export, capsys)
    assert code == 1 and MINE in err and "--trust_model" in err and "Traceback" not in err, err
    assert _entry([*export, "--trust_model"], capsys)[0] == 0

    images = tmp_path / "images"
    images.mkdir()
    for i in range(3):
        Image.fromarray(np.full((8, 8), 40 * i, dtype=np.uint8)).save(images / f"{i}.png")
    infer = ["infer", "--input", str(images), "--output", str(tmp_path / "out.csv")]
    for model in (ckpt, tmp_path / "export" / "weights.pt"):
        code, err = _entry([*infer, "--model", str(model)], capsys)
        assert code == 1 and "--trust_model" in err, err
        assert _entry([*infer, "--model", str(model), "--trust_model"], capsys)[0] == 0
    assert _entry([*infer, "--model", str(tmp_path / "export" / "model.onnx")], capsys)[0] == 0  # a graph: no code
