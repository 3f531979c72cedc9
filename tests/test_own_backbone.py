"""The backbone seam: a backbone class from your own module, named in the config, without editing the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from litstarter.models import create_backbone
from litstarter.models.registry import UntrustedBackboneError
from tests.conftest import REPO, fast_fit_args, run_litstarter

MY_BACKBONES = '''
from torch import nn


class TinyNet(nn.Module):
    """Meets the backbone contract: in_channels in, (B, num_features) out."""

    def __init__(self, in_channels: int = 3, width: int = 8) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(in_channels, width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.num_features = width

    def forward(self, x):
        return self.body(x).flatten(1)


class NoFeatures(nn.Module):
    def __init__(self, in_channels: int = 3) -> None:
        super().__init__()


def build_anything(**kwargs):
    raise SystemExit("a plain function was called")
'''


@pytest.fixture
def my_module(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "my_backbones.py").write_text(MY_BACKBONES)
    monkeypatch.syspath_prepend(str(folder))
    return folder


def test_only_an_nn_module_class_meeting_the_contract_is_built(my_module: Path) -> None:
    assert create_backbone("my_backbones.TinyNet", in_channels=1, width=4).num_features == 4
    with pytest.raises(ValueError, match="not an nn.Module subclass"):
        create_backbone("my_backbones.build_anything")
    with pytest.raises(ValueError, match="not an nn.Module subclass"):
        create_backbone("os.system")
    with pytest.raises(ValueError, match="no int num_features"):
        create_backbone("my_backbones.NoFeatures")
    with pytest.raises(ValueError, match="cannot import 'not_there'.*PYTHONPATH"):
        create_backbone("not_there.Net")
    with pytest.raises(UntrustedBackboneError, match="--trust_model"):
        create_backbone("my_backbones.TinyNet", trust_model=False)
    assert create_backbone("litstarter.models.small_cnn.SmallCNN", trust_model=False).num_features > 0


@pytest.mark.slow
def test_your_backbone_trains_exports_infers_and_loads_in_a_fresh_process(my_module: Path, tmp_path: Path) -> None:
    pytest.importorskip("litstarter.deploy.export", reason="deploy/ was deleted: nothing to export")
    env = {"PYTHONPATH": os.pathsep.join([str(my_module), str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    fit = [*fast_fit_args(tmp_path, epochs=1, name="mine"), "--trainer.limit_train_batches=4"]
    run_litstarter([*fit, "--model.backbone=my_backbones.TinyNet", "--model.backbone_kwargs={width: 16}"], env=env)
    ckpt = tmp_path / "mine" / "version_0" / "checkpoints" / "last.ckpt"
    export = ["export", "--ckpt_path", str(ckpt), "--out", str(tmp_path / "export"), "--formats", "weights", "onnx"]

    refused = run_litstarter(export, env=env, check=False)
    assert refused.returncode == 1, refused.stderr
    assert "my_backbones.TinyNet" in refused.stderr and "--trust_model" in refused.stderr
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
        [sys.executable, "-c", script], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert fresh.stdout.split()[-3:] == ["my_backbones", "TinyNet", "16"]
