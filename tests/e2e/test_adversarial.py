"""Hostile and careless inputs through the real CLI, in subprocesses (issue 17's hardening, issue 12's clean errors).

Each input is built for real (a text file named .ckpt, a code-running pickle, corrupt model files, read-only
folders, two fits at once) and the outcome asserted: a refusal is one named sentence, exit 1 or 2, no traceback;
for kills and permissions, the files that exist afterwards. Permission cases run with root's override rights
dropped (``setpriv``), since CI runs as root. Several cases share one interpreter (``tests.e2e.cli_cases``)
where they don't interfere: the suite's budget.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import CONFIGS, DEFAULT_CONFIG, REPO, make_image_folder

pytestmark = pytest.mark.slow

DROP_ROOT = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
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


def run_cases(tmp_path: Path, cases: list[dict], prefix: list[str] = (), timeout: float = 600) -> list[dict]:
    """Run ``cases`` (``{"argv": [...], "env": {...}}``) in one subprocess; return code, stdout, stderr of each."""
    cases_file, results_file = tmp_path / "cases.json", tmp_path / "results.json"
    cases_file.write_text(json.dumps(cases))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    env.pop("LITSTARTER_TRACEBACK", None)
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "tests.e2e.cli_cases", str(cases_file), str(results_file)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(results_file.read_text())


def assert_refused(result: dict, code: int, *named: str) -> str:
    """Exit ``code``; one ``litstarter <sub>: error:`` sentence naming each of ``named``; no traceback."""
    err = result["stderr"]
    context = f"{result['argv']}\n{err[-3000:]}"
    assert result["code"] == code, context
    assert "Traceback" not in err, context
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith("litstarter "), context
    message = err[err.index(errors[0]) :]
    for name in named:
        assert name in message, (name, context)
    return message


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    """Two fits with the same logger name, started together (issue 17 item 4). Returns ``<save_dir>/digits``."""
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
    for name in runs:
        run = two_runs / name
        metrics = json.loads((run / "metrics.json").read_text())  # whole JSON, not two writers' interleaving
        assert 0.0 <= metrics["test/acc"] <= 1.0
        assert sorted(p.name for p in (run / "checkpoints").iterdir() if p.name.startswith("last")) == ["last.ckpt"]
        assert len(list(run.glob("events.out.tfevents.*"))) == 2  # this run's fit and its test, nobody else's


def _evil_pickle(path: Path, marker: Path) -> Path:
    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    torch.save({"state_dict": {}, "payload": Payload()}, path)
    return path


def test_user_errors_through_the_cli_are_one_sentence_with_the_exit_code(two_runs: Path, tmp_path: Path) -> None:
    """Issue 12 item 5 and issue 17 item 11: bad config values and paths (2), unusable files (1), no traceback."""
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


def _export(ckpt: Path, out: Path) -> None:
    from tests.helpers import run_litstarter

    run_litstarter(["export", "--ckpt_path", str(ckpt), "--out", str(out), "--formats", "weights", "onnx"])


def test_bad_model_files_and_outputs_for_infer_and_export(two_runs: Path, tmp_path: Path) -> None:
    """Issue 17 items 3, 5, 9 and 11: infer --output refusals, model.json against the model, corrupt artifacts,
    export --out into a read-only folder, a fit whose checkpoint folder turns read-only; permissions with root's
    overrides dropped."""
    ckpt = two_runs / "version_0" / "checkpoints" / "last.ckpt"
    export = tmp_path / "export"
    _export(ckpt, export)
    images = tmp_path / "images"
    from tests.helpers import write_image

    inputs = [write_image(images / f"{i}.png", (8, 8), mode="L", seed=i) for i in range(3)]
    original = inputs[0].read_bytes()
    contract = json.loads((export / "model.json").read_text())

    def variant(name: str, change) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(export / "weights.pt", folder / "weights.pt")
        edited = json.loads(json.dumps(contract))
        change(edited)
        (folder / "model.json").write_text(json.dumps(edited))
        return folder

    # weights.pt has only model.json to go by (ONNX, TorchScript and pt2 embed their own copy).
    five_names = variant("five_names", lambda c: c.update(class_names=list("abcde")))
    three_channels = variant("rgb", lambda c: (c["input"]["shape"].__setitem__(1, 3), c["normalization"].update(
        mean=c["normalization"]["mean"] * 3, std=c["normalization"]["std"] * 3)))  # fmt: skip
    resized = variant("resized", lambda c: c["preprocessing"].update(image_size=[6, 6]))
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    for name, data in [("model.onnx", b"\x08\x07garbage"), ("model.ts", b"PK\x03\x04junk"), ("model.pt2", b"junk")]:
        (corrupt / name).write_bytes(data)
    shutil.copy(export / "model.json", corrupt / "model.json")
    lock = {"class_path": "tests.e2e.fault_injection.MakeCheckpointsReadOnly", "init_args": {"epoch": 1}}
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    read_only.chmod(0o555)

    def infer(model: Path, output: Path, *extra: str) -> dict:
        return {"argv": ["infer", "--model", str(model), "--input", str(images), "--output", str(output), *extra]}

    cases = [
        infer(export / "model.onnx", inputs[0]),
        infer(export / "model.onnx", images),
        infer(export / "model.onnx", read_only / "preds.csv"),
        infer(five_names / "weights.pt", tmp_path / "a.csv"),
        infer(three_channels / "weights.pt", tmp_path / "a.csv"),
        infer(resized / "weights.pt", tmp_path / "a.csv"),
        infer(corrupt / "model.onnx", tmp_path / "a.csv"),
        infer(corrupt / "model.ts", tmp_path / "a.csv", "--trust_model"),
        infer(corrupt / "model.pt2", tmp_path / "a.csv"),
        {"argv": ["export", "--ckpt_path", str(ckpt), "--out", str(read_only / "export"), "--formats", "weights"]},
        {"argv": fit_args(read_only)},
        infer(export / "model.onnx", tmp_path / "ok.csv"),
        # Issue 17 item 3: Lightning's atomic save swallows PermissionError; the fit must not go on without them.
        {"argv": fit_args(tmp_path / "runs", "--trainer.max_epochs=3", f"--trainer.callbacks+={json.dumps(lock)}")},
    ]
    results = run_cases(tmp_path, cases, prefix=DROP_ROOT)

    assert_refused(results[0], 2, str(inputs[0]), "one of the input files")
    assert inputs[0].read_bytes() == original
    assert_refused(results[1], 2, str(images), "is a folder")
    assert_refused(results[2], 2, str(read_only), "cannot be written")
    assert_refused(results[3], 1, "model.json", "class_names has 5 names", "(10,) logits")
    assert_refused(results[4], 1, "model.json", "3 channel(s)", "architecture.in_channels")
    assert_refused(results[5], 1, "preprocessing.image_size is [6, 6]", "trained at [8, 8]")
    for result, kind in zip(results[6:9], ("ONNX", "TorchScript", "torch.export"), strict=True):
        assert_refused(result, 1, "cannot load", kind)
    assert_refused(results[9], 2, str(read_only), "cannot be written")
    assert not list(read_only.iterdir())  # no export, no staging folder left behind
    assert_refused(results[10], 2, str(read_only), "Permission denied")
    assert results[11]["code"] == 0, results[11]["stderr"][-2000:]
    assert len((tmp_path / "ok.csv").read_text().splitlines()) == 1 + len(inputs)
    checkpoints = tmp_path / "runs" / "digits" / "version_0" / "checkpoints"
    assert_refused(results[12], 2, str(checkpoints))  # "was not written", or the refused removal of the old best
    assert not (checkpoints.parent / "metrics.json").exists()
    assert [p.name for p in checkpoints.glob("last*.ckpt")] == ["last.ckpt"]  # epoch 0's, kept
