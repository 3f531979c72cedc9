"""export and infer refuse a file whose loading would run code, in one line, and the code never runs."""

from __future__ import annotations

import json

import torch

from litstarter.extras.deploy import export, infer
from litstarter.extras.deploy.contract import ModelContract
from litstarter.models.network import architecture_of
from tests.helpers import imported_markers, write_code_running_pickle, write_marker_module, write_tampered_checkpoint

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


def test_a_class_a_checkpoint_names_never_runs_through_export_or_infer(
    digits_run, digit_files, tmp_path, monkeypatch, capsys
):
    """A real checkpoint with one string changed (optimiser, scheduler, backbone) names a module that is importable
    here: export and infer build only the network, so the optimiser's and scheduler's never import, and the
    backbone's is refused in one line."""
    monkeypatch.syspath_prepend(str(tmp_path))
    ckpt = digits_run / "checkpoints" / "last.ckpt"
    optimizer = torch.load(ckpt, weights_only=True)["hyper_parameters"]["optimizer"]
    payloads = {
        "optimizer": {"optimizer": {**optimizer, "class_path": "evil_optimizer.Opt"}},
        "lr_scheduler": {"lr_scheduler": {"class_path": "evil_lr_scheduler.Sched", "init_args": {}}},
        "backbone": {"backbone": "evil_backbone.Net"},
    }
    inputs = ["--input", str(digit_files[0])]
    for kind, change in payloads.items():
        write_marker_module(tmp_path, f"evil_{kind}")
        (tmp_path / kind).mkdir()
        bad = write_tampered_checkpoint(ckpt, tmp_path / kind / "model.ckpt", **change)
        code = export.main(
            [
                "--ckpt_path",
                str(bad),
                "--config",
                str(digits_run / "config.yaml"),
                "--out",
                str(tmp_path / kind / "export"),
            ]
        )
        infer_code = infer.main(["--model", str(bad), *inputs, "--output", str(tmp_path / kind / "p.csv")])
        err = capsys.readouterr().err
        if kind == "backbone":
            assert (code, infer_code) == (1, 1), err
            assert err.count("evil_backbone.Net") == 2 and "--trust_model" in err, err
        else:
            assert (code, infer_code) == (0, 0), err
    assert imported_markers(tmp_path) == []
