"""Multi-label end to end: a labels file with label sets picks the multi-label task, which learns, tunes its
thresholds and reports its metrics; both labels-file forms give the same run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.helpers import run_cli

pytestmark = pytest.mark.slow


def metrics(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())


def test_both_labels_forms_give_the_same_splits_and_metrics(multilabel_runs) -> None:
    by_labels, by_columns = metrics(multilabel_runs["labels"]), metrics(multilabel_runs["columns"])
    assert by_labels == by_columns
    output = multilabel_runs["output"]
    assert "multi-label, path,labels: ';'-separated label sets" in output
    assert "stratified by label (iterative stratification)" in output


def test_the_task_learns_and_reports_every_metric_at_the_tuned_thresholds_and_at_one_half(multilabel_runs) -> None:
    found = metrics(multilabel_runs["labels"])
    names = [str(d) for d in range(10)]
    for key in ("map_macro", "auroc_macro", "f1_macro", "f1_micro", "subset_acc", "hamming"):
        assert f"test/{key}" in found, key
    for key in ("f1_macro", "f1_micro", "subset_acc", "hamming"):
        assert f"test/{key}_at_0.5" in found
    for name in names:
        assert {f"test/{c}/{name}" for c in ("tp", "fp", "fn", "tn", "threshold")} <= found.keys()
    counts = [[found[f"test/{c}/{n}"] for c in ("tp", "fp", "fn", "tn")] for n in names]
    chance = sum((tp + fn) / (tp + fp + fn + tn) for tp, fp, fn, tn in counts) / len(names)  # AP of random scores
    assert found["test/map_macro"] > chance + 0.05, (found["test/map_macro"], chance)
    assert "test/baseline_acc" not in found  # the pixel baseline is single-label
    checkpoint = torch.load(multilabel_runs["labels"] / "checkpoints" / "last.ckpt", weights_only=True)
    assert checkpoint["task"] == "multilabel"
    assert "model.pos_weight: auto -> {" in multilabel_runs["output"]
    weights = checkpoint["state_dict"]["criterion.pos_weight"]  # negatives / positives of train
    assert weights.shape == (10,) and weights[5:].mean() > weights[:5].mean() > 1  # the composites favour low digits
    tuned = checkpoint["state_dict"]["label_thresholds"]
    assert tuned.shape == (10,) and not torch.all(tuned == 0.5)
    assert not (multilabel_runs["labels"] / "confusion_matrix.png").exists()


def test_given_thresholds_override_the_tuned_ones_at_test(multilabel_runs, tmp_path: Path) -> None:
    run = multilabel_runs["labels"]
    argv = ["test", "--config", str(run / "config.yaml"), "--ckpt_path", str(run / "checkpoints" / "last.ckpt"),
            "--model.thresholds", "0.5", f"--trainer.logger.init_args.save_dir={tmp_path}"]  # fmt: skip
    run_cli(argv)
    (written,) = tmp_path.glob("*/version_*/metrics.json")
    found = json.loads(written.read_text())
    assert found["test/f1_macro"] == found["test/f1_macro_at_0.5"]
    assert all(found[f"test/threshold/{d}"] == 0.5 for d in range(10))


def test_a_multilabel_run_predicts_and_resumes_with_its_labels_and_thresholds(multilabel_runs, tmp_path: Path) -> None:
    run = multilabel_runs["labels"]
    config, last = str(run / "config.yaml"), str(run / "checkpoints" / "last.ckpt")
    cli = run_cli(
        ["predict", "--config", config, "--ckpt_path", last, f"--trainer.logger.init_args.save_dir={tmp_path}"]
    )
    probs = torch.cat(cli.trainer.predict_loop.predictions)
    assert probs.shape[1] == 10 and len(probs) > 0 and 0 <= probs.min() and probs.max() <= 1  # sigmoid per label
    assert cli.model.class_names == [str(d) for d in range(10)]
    before = torch.load(last, weights_only=True)
    argv = ["fit", "--config", config, "--ckpt_path", last, "--trainer.max_epochs=3",
            f"--trainer.logger.init_args.save_dir={tmp_path / 'resumed'}"]  # fmt: skip
    run_cli(argv)
    (resumed,) = (tmp_path / "resumed").glob("*/version_*/checkpoints/last.ckpt")
    after = torch.load(resumed, weights_only=True)
    assert after["epoch"] == before["epoch"] + 1  # one more epoch, from where the run stopped
    assert after["task"] == "multilabel"
    assert after["hyper_parameters"]["class_names"] == before["hyper_parameters"]["class_names"]
    assert after["state_dict"]["label_thresholds"].shape == (10,)  # tuned again after the resumed fit


def test_targets_of_another_task_are_refused_in_one_line_naming_both_and_the_config(tmp_path: Path) -> None:
    from litstarter.errors import UsageError
    from tests.helpers import CONFIGS, FOLDER_CONFIG, fast_fit_args, write_digit_composites, write_digit_photos

    composites = write_digit_composites(tmp_path / "composites", 40)
    photos = write_digit_photos(tmp_path / "photos", {"": [4] * 3}, sizes=(20, 28))
    cache = f"--data.init_args.cache_dir={tmp_path / 'cache'}"
    single = fast_fit_args(tmp_path / "runs", 1, configs=[FOLDER_CONFIG])
    multi = fast_fit_args(tmp_path / "runs", 1, configs=[FOLDER_CONFIG, CONFIGS / "task" / "multilabel.yaml"])
    label_sets = [f"--data.init_args.root={composites}", "--data.init_args.labels=labels.csv", cache]
    with pytest.raises(UsageError) as refused:
        run_cli([*single, *label_sets])
    message = str(refused.value)
    assert "data.labels 'labels.csv'" in message and "label_set targets" in message, message
    assert "ImageClassifier" in message and "configs/task/multilabel.yaml" in message, message
    with pytest.raises(UsageError) as refused:
        run_cli([*multi, f"--data.init_args.root={photos}", cache])
    message = str(refused.value)
    assert f"data.root '{photos}'" in message and "class targets" in message, message
    assert "MultilabelClassifier" in message and "configs/default.yaml" in message, message
    assert not list((tmp_path / "runs").rglob("*.ckpt"))
