"""The backbone seam end to end: a backbone class from your own module, named in the config, trains, exports and
infers (with --trust_model where loading imports it) and reloads in a fresh process, without editing the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.helpers import REPO, fast_fit_args, run_cli

MINE = "tests.examples.my_backbones.TinyNet"


def _entry(args: list[str], capsys) -> tuple[int, str]:
    """``litstarter ARGS`` in this process (the entry point, errors as one line): exit code and stderr."""
    from litstarter.__main__ import main

    code = main(args)
    return code, capsys.readouterr().err


@pytest.mark.slow
def test_your_backbone_trains_exports_infers_and_loads_in_a_fresh_process(tmp_path: Path, capsys) -> None:
    pytest.importorskip("litstarter.extras.deploy.export", reason="deploy/ was deleted: nothing to export")
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

    script = (
        "from litstarter.task import ImageClassifier\n"
        f"model = ImageClassifier.load_from_checkpoint({str(ckpt)!r}, map_location='cpu')\n"
        "print(type(model.net.backbone).__module__, type(model.net.backbone).__name__, model.net.backbone.num_features)"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    fresh = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert fresh.stdout.split()[-3:] == ["tests.examples.my_backbones", "TinyNet", "16"]
