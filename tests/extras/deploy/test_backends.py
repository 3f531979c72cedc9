"""Backends: suffix dispatch and the one-per-process TorchScript deprecation warning."""

from __future__ import annotations

import warnings

import pytest
import torch

from litstarter.extras.deploy import backends


def test_unknown_suffix_lists_the_known_ones(tmp_path):
    path = tmp_path / "model.h5"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match=r"\.ckpt.*\.onnx"):
        backends.open_model(path)


def test_torchscript_deprecation_is_shown_once(monkeypatch):
    monkeypatch.setattr(backends, "_torchscript_noted", False)
    net = torch.nn.Linear(2, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with backends.torchscript_quietly():
                torch.jit.trace(net, torch.zeros(1, 2))
    messages = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    assert len([m for m in messages if "TorchScript is deprecated since torch 2.10" in m]) == 1
    assert not [m for m in messages if m.startswith("`torch.jit.")]
