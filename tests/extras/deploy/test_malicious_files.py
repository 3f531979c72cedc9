"""export and infer refuse a file whose loading would run code, in one line, and the code never runs."""

from __future__ import annotations

import json

from litstarter.extras.deploy import export, infer
from litstarter.extras.deploy.contract import ModelContract
from litstarter.models.classifier import architecture_of
from tests.helpers import write_code_running_pickle

HPARAMS = {"image_size": (8, 8), "resize_size": (8, 8), "in_channels": 1, "num_classes": 2, "backbone": "small_cnn",
           "backbone_kwargs": None, "dropout": 0.0}  # fmt: skip


def test_a_pickle_that_would_run_code_is_refused_by_export_and_infer(tmp_path, capsys):
    marker = tmp_path / "code_ran"
    ckpt = write_code_running_pickle(tmp_path / "checkpoints" / "evil.ckpt", marker)
    weights = write_code_running_pickle(tmp_path / "export" / "weights.pt", marker)
    assert export.main(["--ckpt_path", str(ckpt)]) == 1  # a file that could run code: an unusable model file
    assert "refusing to load" in capsys.readouterr().err
    # A valid sidecar beside it, so that infer gets as far as loading the weights file.
    contract = ModelContract.from_hparams(HPARAMS, [0.5], [0.25], architecture=architecture_of(HPARAMS))
    (weights.parent / "model.json").write_text(json.dumps(contract.to_dict()))
    args = ["--input", str(weights.parent), "--output", str(tmp_path / "p.csv")]
    assert infer.main(["--model", str(weights), *args]) == 1
    assert "refusing to load" in capsys.readouterr().err
    assert not marker.exists()  # the command in the pickle never ran
