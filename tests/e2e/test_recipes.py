"""The accuracy recipes as a user runs them: weight EMA and MixUp/CutMix survive a SIGKILL and resume exactly,
and test-time augmentation averages views on a folder where a flip keeps the class."""

from __future__ import annotations

import json
import logging
import signal
import warnings
from pathlib import Path

import torch

from tests.helpers import (
    CONFIGS,
    DEFAULT_CONFIG,
    FOLDER_CONFIG,
    make_image_folder,
    run_cli,
    run_litstarter,
)

RECIPES = (CONFIGS / "recipe" / "ema.yaml", CONFIGS / "recipe" / "mixup_cutmix.yaml")
STEPS_PER_EPOCH = 6  # --trainer.limit_train_batches
EPOCHS = 3


def recipe_args(save_dir: Path) -> list[str]:
    """A short digits fit with EMA and MixUp/CutMix, mixing off for the last epoch."""
    return [
        "fit", "--config", str(DEFAULT_CONFIG), *(a for c in RECIPES for a in ("--config", str(c))),
        f"--trainer.max_epochs={EPOCHS}", f"--trainer.limit_train_batches={STEPS_PER_EPOCH}",
        f"--trainer.logger.init_args.save_dir={save_dir}", "--data.init_args.num_workers=0",
        f"--model.mix_off_after_epoch={EPOCHS - 1}", "--baseline=false",
    ]  # fmt: skip


def load(path: Path) -> dict:
    return torch.load(path, weights_only=True, map_location="cpu")


def test_ema_and_mixing_resume_after_sigkill_exactly_as_uninterrupted(tmp_path: Path, caplog) -> None:
    """Both the averaged and the live weights resume, and each batch's mixing is replayed: the resumed run ends
    with the uninterrupted run's metrics and both its weight sets, bit for bit."""
    lightning_log = logging.getLogger("lightning.pytorch")  # it does not propagate to the root logger
    lightning_log.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO), warnings.catch_warnings(record=True) as warned:
            run_cli(recipe_args(tmp_path / "whole"))
    finally:
        lightning_log.removeHandler(caplog.handler)
    assert f"MixUp/CutMix off from epoch {EPOCHS - 1}" in caplog.text  # the switch, in the run's log
    # Test-after-fit scores the best checkpoint's state_dict, the average: Lightning's callback would load the
    # live weights beside it over them (and warn outside a fit).
    assert "Found current_model_state" not in caplog.text
    assert not [w for w in warned if "outside the 'fit' stage" in str(w.message)]
    reference = tmp_path / "whole" / "digits" / "version_0"

    kill_step = STEPS_PER_EPOCH + STEPS_PER_EPOCH // 2  # mid-way through the second epoch, still mixing
    killer = json.dumps({"class_path": "tests.e2e.fault_injection.KillAtStep", "init_args": {"step": kill_step}})
    args = recipe_args(tmp_path / "killed")
    proc = run_litstarter([*args, f"--trainer.callbacks+={killer}"], check=False, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    run = tmp_path / "killed" / "digits" / "version_0"
    assert load(run / "checkpoints" / "last.ckpt")["global_step"] == STEPS_PER_EPOCH  # the first epoch's end
    run_cli([*args, f"--ckpt_path={run / 'checkpoints' / 'last.ckpt'}"])

    assert json.loads((run / "metrics.json").read_text()) == json.loads((reference / "metrics.json").read_text())
    final, uninterrupted = load(run / "checkpoints" / "last.ckpt"), load(reference / "checkpoints" / "last.ckpt")
    for part in ("state_dict", "current_model_state"):  # the average, and the live weights beside it
        for key, value in uninterrupted[part].items():
            assert torch.equal(final[part][key], value), f"{part}.{key} differs from the uninterrupted run"
    averaged, live = final["state_dict"], final["current_model_state"]
    assert averaged.keys() == live.keys()
    assert not all(torch.equal(averaged[k], live[k]) for k in averaged)  # the checkpoint holds the average


def test_flip_tta_on_a_flip_invariant_folder_changes_logits_keeps_top1_and_is_recorded(tmp_path: Path) -> None:
    """Classes by colour (noisy, overlapping: a short fit gets most but not all): a mirror image keeps its class,
    so averaging over flips changes the logits but must not cost top-1; metrics.json says which views were used."""
    from litstarter.tasks.classification import ImageClassifier
    from litstarter.tta import tta_logits

    counts = {split: {c: n for c in ("red", "green", "blue")} for split, n in (("train", 24), ("val", 8), ("test", 20))}
    root = make_image_folder(tmp_path / "photos", counts, colours="distinct", spread=70.0, noise=90.0, size=(16, 16))
    common = [f"--trainer.logger.init_args.save_dir={tmp_path}", "--data.init_args.num_workers=0"]
    common += [f"--data.init_args.cache_dir={tmp_path / 'cache'}", "--data.init_args.image_size=16"]
    fit = ["fit", "--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), f"--data.root={root}", *common]
    fit += ["--trainer.max_epochs=3", "--data.init_args.batch_size=8", "--data.augmentation.invert=0"]
    run_cli([*fit, "--baseline=false"])
    run = tmp_path / "image_folder" / "version_0"
    plain = json.loads((run / "metrics.json").read_text())
    assert plain["tta"] == [] and 0.5 < plain["test/acc"] < 1  # learnt, with room to improve

    ckpt, tta = run / "checkpoints" / "last.ckpt", CONFIGS / "recipe" / "tta.yaml"
    cli = run_cli(["test", "--config", str(run / "config.yaml"), "--config", str(tta), f"--ckpt_path={ckpt}", *common])
    tested = json.loads((tmp_path / "image_folder" / "version_1" / "metrics.json").read_text())
    assert tested["tta"] == ["hflip"]
    assert tested["test/acc"] >= plain["test/acc"], (tested["test/acc"], plain["test/acc"])

    model, right = cli.model.eval(), {"plain": 0, "hflip": 0}
    with torch.no_grad():
        for images, labels in cli.datamodule.test_dataloader():
            logits = {"plain": model(images), "hflip": tta_logits(model, images, ["hflip"])}
            assert not torch.allclose(logits["plain"], logits["hflip"])  # the flipped view counts
            right = {k: right[k] + int((v.argmax(-1) == labels).sum()) for k, v in logits.items()}
    assert right["hflip"] >= right["plain"], right
    reloaded = ImageClassifier.load_from_checkpoint(ckpt, map_location="cpu")
    assert reloaded.tta == []  # an evaluation choice, not saved with the weights


def test_recipe_mistakes_are_refused_in_one_line(tmp_path: Path, capsys) -> None:
    from litstarter.__main__ import main as entry

    weights_only = {
        "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
        "init_args": {"save_weights_only": True, "monitor": "val/loss"},
    }
    args = recipe_args(tmp_path / "runs")
    for extra, named in (
        ([f"--trainer.callbacks+={json.dumps(weights_only)}"], ("EMA", "save_weights_only")),  # would save live
        (["--model.mixup_alpha=-1"], ("model.mixup_alpha", "-1")),
        (["--model.tta=[vflip]"], ("model.tta", "vflip")),
    ):
        assert entry([*args, *extra]) == 2
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if ": error: " in line]
        assert len(errors) == 1 and errors[0].startswith("litstarter fit: error: "), err
        assert all(name in errors[0] for name in named), err
