"""The backbone seam end to end: a backbone class from your own module, named in the config, trains and reloads in a
fresh process, without editing the package (its export and infer are tested with the deploy extra's tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, fast_fit_args, run_cli

MINE = "tests.examples.my_backbones.TinyNet"


@pytest.mark.slow
def test_your_backbone_trains_and_loads_in_a_fresh_process(tmp_path: Path) -> None:
    fit = [*fast_fit_args(tmp_path, epochs=1, name="mine"), "--trainer.limit_train_batches=4", "--test_after_fit=false"]
    run_cli([*fit, f"--model.backbone={MINE}", "--model.backbone_kwargs={width: 16}"])
    ckpt = tmp_path / "mine" / "version_0" / "checkpoints" / "last.ckpt"

    script = (
        "from litstarter.tasks.classification import ImageClassifier\n"
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
