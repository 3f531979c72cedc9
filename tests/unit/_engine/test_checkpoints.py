"""Weights load only through torch.load(weights_only=True); what does not fit is named, key by key."""

from __future__ import annotations

import pytest
import torch

from litstarter._engine.checkpoints import CheckpointError, load_state_dict_checked, load_torch_file
from litstarter.models.classifier import build_classifier
from litstarter.tasks.classification import ImageClassifier
from tests.helpers import write_code_running_pickle


def test_a_pickle_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "code_ran"
    ckpt = write_code_running_pickle(tmp_path / "evil.ckpt", marker)
    with pytest.raises(CheckpointError, match="refusing to load .*evil.ckpt"):
        load_torch_file(ckpt)
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
