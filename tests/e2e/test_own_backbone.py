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

from tests.conftest import REPO, fast_fit_args, run_litstarter


@pytest.mark.slow
def test_your_backbone_trains_exports_infers_and_loads_in_a_fresh_process(tmp_path: Path) -> None:
    pytest.importorskip("litstarter.deploy.export", reason="deploy/ was deleted: nothing to export")
    env = {"PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    fit = [*fast_fit_args(tmp_path, epochs=1, name="mine"), "--trainer.limit_train_batches=4"]
    run_litstarter(
        [*fit, "--model.backbone=tests.examples.my_backbones.TinyNet", "--model.backbone_kwargs={width: 16}"], env=env
    )
    ckpt = tmp_path / "mine" / "version_0" / "checkpoints" / "last.ckpt"
    export = ["export", "--ckpt_path", str(ckpt), "--out", str(tmp_path / "export"), "--formats", "weights", "onnx"]

    refused = run_litstarter(export, env=env, check=False)
    assert refused.returncode == 1, refused.stderr
    assert "tests.examples.my_backbones.TinyNet" in refused.stderr and "--trust_model" in refused.stderr
    assert "Traceback" not in refused.stderr
    run_litstarter([*export, "--trust_model"], env=env)

    images = tmp_path / "images"
    images.mkdir()
    for i in range(3):
        Image.fromarray(np.full((8, 8), 40 * i, dtype=np.uint8)).save(images / f"{i}.png")
    infer = ["infer", "--input", str(images), "--output", str(tmp_path / "out.csv")]
    for model in (ckpt, tmp_path / "export" / "weights.pt"):
        refused = run_litstarter([*infer, "--model", str(model)], env=env, check=False)
        assert refused.returncode == 1 and "--trust_model" in refused.stderr, refused.stderr
        run_litstarter([*infer, "--model", str(model), "--trust_model"], env=env)
    run_litstarter([*infer, "--model", str(tmp_path / "export" / "model.onnx")], env=env)  # a graph: no code

    script = (
        "from litstarter.task import ImageClassifier\n"
        f"model = ImageClassifier.load_from_checkpoint({str(ckpt)!r}, map_location='cpu')\n"
        "print(type(model.net.backbone).__module__, type(model.net.backbone).__name__, model.net.backbone.num_features)"
    )
    fresh = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert fresh.stdout.split()[-3:] == ["tests.examples.my_backbones", "TinyNet", "16"]
