"""The recipes downstream of training: an EMA run exports its averaged weights, and infer averages test-time views."""

from __future__ import annotations

from pathlib import Path

import torch

from litstarter.extras.deploy import export, infer
from tests.extras.deploy.helpers import read_csv
from tests.helpers import CONFIGS, fast_fit_args, run_cli


def test_an_ema_run_exports_the_averaged_weights_and_infer_averages_flips(tmp_path: Path, digit_files, capsys) -> None:
    args = fast_fit_args(tmp_path, epochs=1, configs=[CONFIGS / "recipe" / "ema.yaml"])
    run_cli([*args, "--trainer.limit_train_batches=4", "--test_after_fit=false"])
    ckpt = tmp_path / "digits" / "version_0" / "checkpoints" / "last.ckpt"
    assert export.main(["--ckpt_path", str(ckpt), "--out", str(tmp_path / "export"), "--formats", "weights"]) == 0
    exported = torch.load(tmp_path / "export" / "weights.pt", weights_only=True)
    state = torch.load(ckpt, weights_only=True, map_location="cpu")
    averaged, live = (
        {k.removeprefix("net."): v for k, v in state[part].items()} for part in ("state_dict", "current_model_state")
    )
    for key, value in exported.items():
        assert torch.equal(value, averaged[key]), key
    assert not all(torch.equal(value, live[key]) for key, value in exported.items())  # not the live weights

    folder, files, _ = digit_files
    rows = {}
    for name, extra in (("plain", []), ("tta", ["--tta", "hflip"])):
        out = tmp_path / f"{name}.csv"
        assert infer.main(["--model", str(ckpt), "--input", str(folder), "--output", str(out), *extra]) == 0
        rows[name] = read_csv(out)
    assert [r["file"] for r in rows["plain"]] == [r["file"] for r in rows["tta"]]
    assert any(a["prob"] != b["prob"] for a, b in zip(rows["plain"], rows["tta"], strict=True))
    capsys.readouterr()
    assert (
        infer.main(
            ["--model", str(ckpt), "--input", str(folder), "--output", str(tmp_path / "x.csv"), "--tta", "vflip"]
        )
        == 2
    )
    assert "--tta: unknown view 'vflip'" in capsys.readouterr().err
