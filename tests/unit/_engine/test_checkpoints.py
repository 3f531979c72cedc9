"""Weights load only through torch.load(weights_only=True); what does not fit is named, key by key."""

from __future__ import annotations

import json
import os
import pickle

import pytest
import torch

from litstarter._engine.checkpoints import CheckpointError, load_state_dict_checked, load_torch_file
from litstarter.extras.deploy import export, infer
from litstarter.extras.deploy.contract import ModelContract
from litstarter.models.classifier import architecture_of, build_classifier
from litstarter.task import ImageClassifier


class RunsCode:
    """Unpickling this runs a shell command: what a malicious .pt/.ckpt would do."""

    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def malicious(tmp_path):
    marker = tmp_path / "code_ran"
    paths = []
    for name in ("checkpoints/evil.ckpt", "export/weights.pt"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            pickle.dump({"state_dict": RunsCode(marker)}, f, protocol=2)
        paths.append(path)
    return marker, paths


def test_pickle_that_would_run_code_is_refused(malicious, tmp_path, capsys):
    marker, (ckpt, weights) = malicious
    with pytest.raises(CheckpointError, match="refusing to load .*evil.ckpt"):
        load_torch_file(ckpt)
    assert export.main(["--ckpt_path", str(ckpt)]) == 1  # a file that could run code: an unusable model file
    assert "refusing to load" in capsys.readouterr().err
    # A valid sidecar beside it, so that infer gets as far as loading the weights file.
    hparams = {
        "image_size": (8, 8),
        "resize_size": (8, 8),
        "in_channels": 1,
        "num_classes": 2,
        "backbone": "small_cnn",
        "backbone_kwargs": None,
        "dropout": 0.0,
    }
    contract = ModelContract.from_hparams(hparams, [0.5], [0.25], architecture=architecture_of(hparams))
    (weights.parent / "model.json").write_text(json.dumps(contract.to_dict()))
    args = ["--input", str(weights.parent), "--output", str(tmp_path / "p.csv")]
    assert infer.main(["--model", str(weights), *args]) == 1
    assert "refusing to load" in capsys.readouterr().err
    assert not marker.exists()  # the command in the pickle never ran


def test_build_classifier_matches_the_task(tmp_path):
    architecture = {
        "backbone": "small_cnn",
        "backbone_kwargs": {"widths": [8, 16]},
        "num_classes": 4,
        "in_channels": 3,
        "dropout": 0.1,
    }
    task_net = ImageClassifier(**architecture, image_size=(16, 16)).net
    ours = build_classifier(architecture)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {k: v.shape for k, v in task_net.state_dict().items()}
    load_state_dict_checked(ours, task_net.state_dict(), source="task")
    x = torch.randint(0, 256, (2, 3, 16, 16), dtype=torch.uint8)
    assert torch.equal(ours.eval()(x), task_net.eval()(x))


def test_state_dict_that_does_not_fit_names_every_problem():
    net = build_classifier(
        {"backbone": "small_cnn", "backbone_kwargs": {"widths": [8, 16]}, "num_classes": 3, "in_channels": 1}
    )
    state = net.state_dict()
    state["head.weight"] = torch.zeros(5, 16)
    state["extra.weight"] = torch.zeros(1)
    del state["head.bias"]
    with pytest.raises(CheckpointError) as err:
        load_state_dict_checked(net, state, source="weights x.pt")
    message = str(err.value)
    assert message.startswith("weights x.pt does not fit")
    assert "head.weight: file (5, 16) vs model (3, 16)" in message
    assert "missing keys: head.bias" in message and "unexpected keys: extra.weight" in message
