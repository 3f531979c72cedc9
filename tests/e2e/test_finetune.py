"""Fine-tuning end to end through the CLI: init_from with head replacement beats scratch, the fine-tuned run
stands alone, and the finetune experiment config starts from the image-folder run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from litstarter.tasks.classification import ImageClassifier
from tests.helpers import CONFIGS, DEFAULT_CONFIG, best_checkpoint, fast_fit_args, make_image_folder, run_cli

FIRST_HALF = "--data.init_args.classes=[0,1,2,3,4]"
SECOND_HALF = "--data.init_args.classes=[5,6,7,8,9]"
# A small budget: one epoch of 3 batches. The gap to scratch was 0.10-0.36 test accuracy over seeds 0-3 while
# developing (fine-tuned 0.64-0.75, scratch 0.40-0.60); with a whole epoch scratch catches up on digits.
BUDGET = ["--trainer.limit_train_batches=3"]


def _test_acc(run_dir: Path) -> float:
    return json.loads((run_dir / "metrics.json").read_text())["test/acc"]


def test_finetuning_from_digits_0_4_beats_scratch_on_5_9_through_config(tmp_path: Path) -> None:
    run_cli([*fast_fit_args(tmp_path, epochs=3, name="base"), FIRST_HALF, "--test_after_fit=false"])
    base_ckpt = best_checkpoint(tmp_path / "base" / "version_0")
    base_backbone = {k for k in torch.load(base_ckpt, weights_only=True)["state_dict"] if k.startswith("net.backbone.")}

    cli = run_cli([*fast_fit_args(tmp_path, epochs=1, name="finetune"), SECOND_HALF, *BUDGET,
                   f"--model.init_from={base_ckpt}"])  # fmt: skip
    report = cli.model.init_report
    loaded = {"net." + k for k in report.matched if k.startswith("backbone.")}
    assert loaded == base_backbone  # the whole backbone loaded (scalar buffers too, though they don't count)
    assert not report.missing and not report.unexpected and not report.mismatched
    assert "the classes differ" in report.head_replaced
    assert cli.model.class_names == ["5", "6", "7", "8", "9"] and cli.model.net.head.out_features == 5

    run_cli([*fast_fit_args(tmp_path, epochs=1, name="scratch"), SECOND_HALF, *BUDGET])
    finetuned, scratch = _test_acc(tmp_path / "finetune" / "version_0"), _test_acc(tmp_path / "scratch" / "version_0")
    assert finetuned >= scratch, f"fine-tuned {finetuned:.3f} < scratch {scratch:.3f} after the same budget"

    # The fine-tuned run no longer needs the file it started from: loading and resuming never re-read init_from.
    shutil.rmtree(tmp_path / "base")
    run_dir = tmp_path / "finetune" / "version_0"
    model = ImageClassifier.load_from_checkpoint(best_checkpoint(run_dir))
    assert model.class_names == ["5", "6", "7", "8", "9"] and model.net.head.out_features == 5
    assert model.hparams.init_from == str(base_ckpt)
    run_cli(["fit", "--config", str(run_dir / "config.yaml"), "--trainer.max_epochs=2", "--test_after_fit=false",
             f"--ckpt_path={run_dir / 'checkpoints' / 'last.ckpt'}"])  # fmt: skip


def test_finetune_experiment_config_starts_from_the_image_folder_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # runs/ and runs/cache/ land here, where the experiment's init_from points
    colours = {"a": (60, 60, 60), "b": (120, 120, 120), "c": (60, 60, 60), "d": (120, 120, 120), "e": (180, 180, 180)}
    first = make_image_folder(tmp_path / "first", dict.fromkeys("ab", 8), size=(12, 12), colours=colours, noise=30)
    second = make_image_folder(tmp_path / "second", dict.fromkeys("cde", 8), size=(12, 12), colours=colours, noise=30)
    small = ["--data.init_args.image_size=8", "--data.init_args.num_workers=0", "--test_after_fit=false"]
    run_cli(["fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
             f"--data.root={first}", "--trainer.max_epochs=1", *small])  # fmt: skip
    cli = run_cli(["fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
                   "--config", str(CONFIGS / "experiment" / "finetune.yaml"),
                   f"--data.root={second}", "--trainer.max_epochs=3", *small])  # fmt: skip
    report = cli.model.init_report
    assert Path(report.source).resolve() == (tmp_path / "runs/image_folder/version_0/checkpoints/last.ckpt").resolve()
    assert report.backbone_matched and not report.missing and not report.mismatched
    assert "num_classes differs" in report.head_replaced or "classes differ" in report.head_replaced
    assert cli.model.class_names == ["c", "d", "e"]
    assert cli.trainer.current_epoch == 3 and (tmp_path / "runs" / "finetune" / "version_0").is_dir()
