"""Hostile and careless inputs through the real CLI, in subprocesses: every refusal is one clean sentence.

Each input is built for real (a text file named .ckpt, a code-running pickle, corrupt model files, read-only
folders, two fits at once) and the outcome asserted: a refusal is one named sentence, exit 1 or 2, no traceback;
for kills and permissions, the files that exist afterwards. Permission cases run with root's override rights
dropped (``setpriv``), since CI runs as root. Several cases share one interpreter (``tests.e2e.cli_cases``)
where they don't interfere: the suite's budget.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import (
    CONFIGS,
    DEFAULT_CONFIG,
    DROP_ROOT,
    REPO,
    assert_refused,
    imported_markers,
    make_image_folder,
    run_cases,
    write_marker_module,
    write_tampered_checkpoint,
)

pytestmark = pytest.mark.slow

# One epoch of a few batches: enough to write checkpoints, metrics.json and a confusion matrix.
QUICK = [
    "--trainer.max_epochs=1",
    "--trainer.limit_train_batches=3",
    "--trainer.limit_val_batches=2",
    "--trainer.limit_test_batches=2",
    "--trainer.enable_model_summary=false",
    "--data.init_args.num_workers=0",
]


def fit_args(save_dir: Path, *extra: str) -> list[str]:
    """A quick digits fit into ``save_dir/digits/``."""
    return ["fit", "--config", str(DEFAULT_CONFIG), *QUICK, f"--trainer.logger.init_args.save_dir={save_dir}", *extra]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    """Two fits with the same logger name, started together. Returns ``<save_dir>/digits``."""
    save_dir = tmp_path_factory.mktemp("concurrent")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "litstarter", *fit_args(save_dir)],
            cwd=save_dir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out[-3000:]
    return save_dir / "digits"


def test_two_fits_with_one_logger_name_started_together_get_two_intact_run_folders(two_runs: Path) -> None:
    runs = sorted(p.name for p in two_runs.iterdir())
    assert runs == ["version_0", "version_1"], runs
    writers = []
    for name in runs:
        run = two_runs / name
        metrics = json.loads((run / "metrics.json").read_text())  # whole JSON, not two writers' interleaving
        assert 0.0 <= metrics["test/acc"] <= 1.0
        assert sorted(p.name for p in (run / "checkpoints").iterdir() if p.name.startswith("last")) == ["last.ckpt"]
        # This run's fit, its test and its baseline's scores: one process's files (the pid in each name), nobody else's
        events = list(run.glob("events.out.tfevents.*"))
        assert len(events) == 3, events
        writers.append({p.name.split(".")[-2] for p in events})
        assert len(writers[-1]) == 1, events
    assert writers[0] != writers[1], writers


def _evil_pickle(path: Path, marker: Path) -> Path:
    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    torch.save({"state_dict": {}, "payload": Payload()}, path)
    return path


def test_user_errors_through_the_cli_are_one_sentence_with_the_exit_code(two_runs: Path, tmp_path: Path) -> None:
    """Bad config values and paths (exit 2), unusable files (exit 1), no traceback."""
    ckpt = two_runs / "version_0" / "checkpoints" / "last.ckpt"
    (tmp_path / "notes.ckpt").write_text("these are my notes, not a checkpoint\n")
    marker = tmp_path / "PWNED"
    evil = _evil_pickle(tmp_path / "evil.ckpt", marker)
    one_class = make_image_folder(tmp_path / "one_class", {"cats": 6})
    five = make_image_folder(tmp_path / "five", {c: 4 for c in "abcde"}, size=(8, 8))
    folder = ["--config", str(CONFIGS / "data" / "image_folder.yaml"), "--data.init_args.image_size=8"]
    runs = tmp_path / "runs"
    offline = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "TORCH_HOME": str(tmp_path)}
    cases = [
        fit_args(runs, *folder, f"--data.root={tmp_path / 'nowhere'}"),
        fit_args(runs, "--model.label_smoothing=1.5"),
        fit_args(runs, *folder, f"--data.root={one_class}"),
        fit_args(runs, f"--ckpt_path={tmp_path / 'notes.ckpt'}"),
        fit_args(runs, f"--ckpt_path={evil}"),
        ["test", "--config", str(DEFAULT_CONFIG), *QUICK, *folder, f"--data.root={five}", f"--ckpt_path={ckpt}"],
        ["test", "--config", str(DEFAULT_CONFIG), *QUICK, f"--ckpt_path={tmp_path / 'gone.ckpt'}"],
        fit_args(runs, "--config", str(CONFIGS / "trainer" / "gpu.yaml")),
        fit_args(
            runs,
            "--model.backbone=mobilenet_v3_small",
            "--model.weights=IMAGENET1K_V1",
            "--trainer.logger.init_args.name=offline",
        ),
        fit_args(runs, "--trainer.max_epochs=0", "--trainer.logger.init_args.name=zero"),
        fit_args(runs, "--model.label_smoothing=1.5"),
        fit_args(runs, "--trainer.enable_checkpointing=false"),  # Lightning's own refusal of a config
    ]
    envs = [{}] * 8 + [offline, {}, {"LITSTARTER_TRACEBACK": "1"}, {}]
    results = run_cases(tmp_path, [{"argv": argv, "env": env} for argv, env in zip(cases, envs, strict=True)])

    assert_refused(results[0], 2, "data.root", "nowhere", "does not exist")
    # jsonargparse's "Does not validate against any of the Union subtypes" never leads: ours does.
    assert_refused(results[1], 2, "model.label_smoothing must be in [0, 1), got 1.5")
    assert_refused(results[2], 2, str(one_class), "1 class", "cats")
    assert_refused(results[3], 1, "notes.ckpt", "as a torch file")
    message = assert_refused(results[4], 1, "evil.ckpt", "could run code")
    assert "weights_only=False" not in message and "weights_only` set to `False" not in message
    assert not marker.exists()
    assert_refused(results[5], 1, "trained on 10 classes", "has 5")
    assert_refused(results[6], 2, "gone.ckpt", "does not exist")
    assert_refused(results[7], 2, "trainer.accelerator", "no CUDA GPU")
    assert_refused(results[8], 2, "mobilenet_v3_small", "IMAGENET1K_V1", "Offline?")
    # max_epochs 0: a warning, no test of random weights, no metrics.json.
    assert results[9]["code"] == 0, results[9]["stderr"][-2000:]
    assert "max_epochs=0" in results[9]["stderr"] and "test-after-fit is skipped" in results[9]["stderr"]
    assert not list((runs / "zero").rglob("metrics.json"))
    # LITSTARTER_TRACEBACK=1 shows the traceback, and still ends in our sentence.
    assert results[10]["code"] == 2 and "Traceback" in results[10]["stderr"]
    assert results[10]["stderr"].rstrip().splitlines()[-1].startswith("litstarter fit: error: model.label_smoothing")
    assert_refused(results[11], 2, "enable_checkpointing=False", "ModelCheckpoint")
    # Refused runs leave no empty run folder behind.
    assert not (runs / "digits").exists() or not any((runs / "digits").iterdir())


def test_fits_into_folders_that_are_or_turn_read_only_stop_with_a_sentence(tmp_path: Path) -> None:
    """A fit into a read-only folder, and one whose checkpoint folder turns read-only after its first epoch (Lightning's
    atomic save swallows the PermissionError: the fit must not go on without checkpoints); permissions with root's
    overrides dropped."""
    lock = {"class_path": "tests.e2e.fault_injection.MakeCheckpointsReadOnly", "init_args": {"epoch": 1}}
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    read_only.chmod(0o555)
    cases = [
        {"argv": fit_args(read_only)},
        {"argv": fit_args(tmp_path / "runs", "--trainer.max_epochs=3", f"--trainer.callbacks+={json.dumps(lock)}")},
    ]
    results = run_cases(tmp_path, cases, prefix=DROP_ROOT)
    assert_refused(results[0], 2, str(read_only), "Permission denied")
    checkpoints = tmp_path / "runs" / "digits" / "version_0" / "checkpoints"
    assert_refused(results[1], 2, str(checkpoints))  # "was not written", or the refused removal of the old best
    assert not (checkpoints.parent / "metrics.json").exists()
    assert [p.name for p in checkpoints.glob("last*.ckpt")] == ["last.ckpt"]  # epoch 0's, kept


def test_a_class_a_checkpoint_names_is_imported_only_from_trusted_packages_the_users_config_or_with_trust(
    two_runs: Path, tmp_path: Path
) -> None:
    """A real checkpoint with one string changed names a module beside it (importable under ``python -m``): the
    optimiser, the backbone or the scheduler, through every subcommand that merges a checkpoint's settings."""
    ckpt = two_runs / "version_0" / "checkpoints" / "last.ckpt"
    optimizer = torch.load(ckpt, weights_only=True)["hyper_parameters"]["optimizer"]
    payloads = {
        "optimizer": lambda module: {"optimizer": {**optimizer, "class_path": f"{module}.Opt"}},
        "backbone": lambda module: {"backbone": f"{module}.Net"},
        "lr_scheduler": lambda module: {"lr_scheduler": {"class_path": f"{module}.Sched", "init_args": {}}},
    }
    quick = [*QUICK, "--trainer.logger=false", "--trainer.limit_predict_batches=1"]
    cases, expected = [], []
    for subcommand in ("fit", "test", "validate", "predict"):
        for kind, payload in payloads.items():
            module = f"evil_{kind}_{subcommand}"
            write_marker_module(tmp_path, module)
            bad = write_tampered_checkpoint(ckpt, tmp_path / f"{module}.ckpt", **payload(module))
            cases.append([subcommand, "--config", str(DEFAULT_CONFIG), *quick, f"--ckpt_path={bad}"])
            expected.append((kind, f"{module}."))
    # Any installed module, the standard library's `this` (it prints the Zen of Python) as well.
    zen = write_tampered_checkpoint(ckpt, tmp_path / "zen.ckpt", optimizer={**optimizer, "class_path": "this.Opt"})
    cases.append(["validate", "--config", str(DEFAULT_CONFIG), *quick, f"--ckpt_path={zen}"])
    expected.append(("optimizer", "this.Opt"))
    # Trusted by the user: --trust_model, or the same class named in their own config.
    write_marker_module(tmp_path, "trusted_opt")
    write_marker_module(tmp_path, "named_opt")
    trusted = write_tampered_checkpoint(
        ckpt, tmp_path / "trusted.ckpt", optimizer={**optimizer, "class_path": "trusted_opt.Opt"}
    )
    named = write_tampered_checkpoint(
        ckpt, tmp_path / "named.ckpt", optimizer={**optimizer, "class_path": "named_opt.Opt"}
    )
    test = ["test", "--config", str(DEFAULT_CONFIG), *quick]
    cases += [
        [*test, f"--ckpt_path={trusted}", "--trust_model=true"],
        [*test, f"--ckpt_path={named}", "--model.optimizer=named_opt.Opt"],
        [*test, f"--ckpt_path={ckpt}"],  # the default config's own classes need no trust
    ]
    results = run_cases(tmp_path, [{"argv": argv} for argv in cases])

    for result, (key, named_class) in zip(results, expected, strict=False):
        assert_refused(result, 1, f"names {key}", named_class, "--trust_model")
        assert "Beautiful is better than ugly" not in result["stdout"]
    for result in results[len(expected) :]:
        assert result["code"] == 0, (result["argv"], result["stderr"][-3000:])
    assert imported_markers(tmp_path) == ["trusted_opt", "named_opt"]  # only where the user trusted it


def test_config_mistakes_are_one_line_naming_the_key_or_file_with_the_nearest_option(tmp_path: Path) -> None:
    """A wrong type, a missing or broken config file, an unknown key in a file or on the command line, a prefix of
    an option (argparse would take ``--trainer.max_epoch`` for ``max_epochs``), a stock config without the
    files its opening command composes it on, and a required option left out: one line, never the usage."""
    (tmp_path / "tab.yaml").write_text("trainer:\n\tmax_epochs: 2\n")
    (tmp_path / "broken.yaml").write_text("trainer: [\n")
    (tmp_path / "unknown.yaml").write_text("trainer:\n  max_epochz: 2\n")
    base = ["--config", str(DEFAULT_CONFIG), *QUICK]
    folder_config = str(DEFAULT_CONFIG.parent / "data/image_folder.yaml")  # stock configs without their bases
    segmentation_config = str(DEFAULT_CONFIG.parent / "task/segmentation.yaml")
    cases = [
        ["fit", *base, "--trainer.max_epochs=abc"],
        ["fit", *base, "--config", "missing.yaml"],
        ["fit", *base, "--config", "tab.yaml"],
        ["fit", *base, "--config", "broken.yaml"],
        ["fit", *base, "--config", "unknown.yaml"],
        ["fit", *base, "--trainer.max_epochz=3"],
        ["fit", *base, "--trainer.max_epoch", "7"],
        ["fit", *base, "--model.optimizer.init_args.lrr=0.1"],
        ["validate", *base, "--data.init_args.batch_sise=8"],
        ["fit", "--config", folder_config, "--data.root", str(tmp_path)],
        ["fit", "--config", segmentation_config],
        ["fit", "--config", folder_config, "--config", segmentation_config, "--data.root", str(tmp_path)],
        ["fit", "--config", str(DEFAULT_CONFIG), "--config", folder_config],
    ]
    results = run_cases(tmp_path, [{"argv": argv} for argv in cases])
    expected = [
        ("trainer.max_epochs: expected int", "'abc'"),
        ("--config", "missing.yaml", "does not exist"),
        ("tab.yaml line 2, column 1", "tab"),
        ("broken.yaml line 2",),
        ("trainer.max_epochz in unknown.yaml: no such option", "did you mean trainer.max_epochs?"),
        ("--trainer.max_epochz: no such option", "did you mean --trainer.max_epochs?"),
        ("--trainer.max_epoch: no such option", "did you mean --trainer.max_epochs?"),
        ("model.optimizer.init_args.lrr: not an option of AdamW", "did you mean lr?"),
        ("litstarter validate: error: data.batch_sise: not an option of DigitsDataModule", "did you mean batch_size?"),
        ("image_folder.yaml states only its changes to configs/default.yaml", "pass --config configs/default.yaml"),
        ("required", "segmentation.yaml states only its changes to", "--config configs/data/digit_segmentation.yaml"),
        ("states only its changes to configs/default.yaml:", "pass --config configs/default.yaml before it)"),
        ("litstarter fit: error: --data.root: required by ImageFolderDataModule, and not given",),
    ]
    for result, named in zip(results, expected, strict=True):
        assert_refused(result, 2, *named)
        assert "usage:" not in result["stderr"], result["stderr"][-3000:]
    assert "digit_segmentation" not in results[-2]["stderr"]  # image_folder.yaml stands in for the digits' data


def test_a_run_name_that_climbs_a_logger_less_fit_a_bare_pickle_and_fits_failing_before_training(tmp_path: Path):
    """A logger name with '..' is refused (nothing lands outside save_dir); ``--trainer.logger false`` drops the
    learning-rate monitor and fits; a bare pickle as --ckpt_path is named as such; fits that fail before their first
    step (a refused init_from, one class, a bad image) leave no run folder, though setup wrote config.yaml; a fit on
    a tiny validation split says so."""
    import pickle

    runs = tmp_path / "runs"
    with open(tmp_path / "bare.ckpt", "wb") as f:
        pickle.dump({"state_dict": {}}, f, protocol=2)
    (tmp_path / "notes.pt").write_text("not weights\n")
    one_class = make_image_folder(tmp_path / "one_class", {"cats": 6})
    bad = make_image_folder(tmp_path / "bad", {"a": 5, "b": 5})
    tiny = make_image_folder(tmp_path / "tiny", {"a": 12, "b": 12}, size=(8, 8))
    (bad / "a" / "broken.png").write_bytes(b"\x89PNG not really")
    folder = ["--config", str(CONFIGS / "data" / "image_folder.yaml"), "--data.init_args.image_size=8"]
    failed = "--trainer.logger.init_args.name=failed"
    cases = [
        fit_args(runs, "--trainer.logger.init_args.name=../../escape"),
        fit_args(runs, "--trainer.logger=false", "--test_after_fit=false"),
        fit_args(runs, f"--ckpt_path={tmp_path / 'bare.ckpt'}"),
        fit_args(runs, failed, f"--model.init_from={tmp_path / 'notes.pt'}"),
        fit_args(runs, failed, *folder, f"--data.root={one_class}"),
        fit_args(runs, failed, *folder, f"--data.root={bad}", f"--data.init_args.cache_dir={tmp_path / 'cache'}"),
        fit_args(runs, *folder, f"--data.root={tiny}", "--trainer.logger.init_args.name=tiny"),
    ]
    results = run_cases(tmp_path, [{"argv": argv} for argv in cases])

    assert_refused(results[0], 2, "trainer.logger.init_args.name", "'../../escape'", "save_dir")
    assert not list(tmp_path.parent.glob("escape")) and not list(tmp_path.glob("escape"))
    assert results[1]["code"] == 0, results[1]["stderr"][-3000:]
    assert "LearningRateMonitor dropped" in results[1]["stderr"]
    assert_refused(results[2], 1, "bare.ckpt", "plain pickle")
    assert_refused(results[3], 1, "notes.pt")
    assert_refused(results[4], 2, "1 class", "cats")
    assert_refused(results[5], 1, "broken.png")
    assert not (runs / "failed").exists() or not any((runs / "failed").iterdir()), list((runs / "failed").rglob("*"))
    # A fit whose validation split is a handful of images says it can't select on it, and trains.
    assert results[6]["code"] == 0, results[6]["stderr"][-3000:]
    assert "too few to select a checkpoint on" in results[6]["stderr"]
