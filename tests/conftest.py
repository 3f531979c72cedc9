"""Session fixtures: train once per session, shared by every test that needs a run (each extra's tests folder holds
its own).

Plain helpers (paths, CLI runners, image folders, TensorBoard readers) live in tests/helpers.py.
The whole suite must stay under 30 minutes on 2 cores, `make test-fast` under 2 minutes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import fast_fit_args, run_cli


@pytest.fixture(scope="session")
def digits_run(tmp_path_factory) -> Path:
    """One short digits fit (3 epochs, in-process), shared by every test that needs a trained run.

    Returns the run directory ``<save_dir>/digits/version_0`` with config.yaml, checkpoints/ and metrics.json.
    Treat it as read-only; copy it if a test must change it.
    """
    save_dir = tmp_path_factory.mktemp("digits_run")
    run_cli(fast_fit_args(save_dir, epochs=3))
    run_dir = save_dir / "digits" / "version_0"
    assert (run_dir / "checkpoints" / "last.ckpt").exists()
    return run_dir


#: The timm families every timm check shares, at the digits' 8x8 with random init: (backbone, extra fit arguments).
#: The ResNet also covers the memory and fine-tuning switches (and ``resnet_init`` starts from its checkpoint),
#: MobileNetV3 (whose feature count is not its num_features) layer decay and compile. resnet10t, not resnet18: the
#: same family at 40% of the parameters, so that the fits and exports stay within the suite's budget.
TIMM_FITS = {
    "resnet": ("timm/resnet10t", ["--model.freeze_backbone_epochs=1", "--model.backbone_lr_scale=0.5",
                                  "--model.channels_last=true", "--model.gradient_checkpointing=true"]),
    "mobilenetv3": ("timm/mobilenetv3_small_100", ["--model.layer_decay=0.5", "--trainer.log_every_n_steps=1",
                                                   "--model.compile={backend: eager}"]),
}  # fmt: skip


@pytest.fixture(scope="session")
def timm_runs(tmp_path_factory) -> dict[str, dict]:
    """Every timm fit of the suite in one subprocess, as ``{name: {"run": run dir, "code", "stdout", "stderr"}}``:

    * the two :data:`TIMM_FITS` (2 epochs of 3 batches) and ``resnet_init``, one epoch from the ResNet's checkpoint;
    * ``convnext``: ConvNeXt on a generated photo folder at 64 px from a local weights file (timm's own state_dict
      of the model, head included, at ``weights``), one epoch of 2 batches;
    * ``too_small`` and ``offline``: ConvNeXt at the digits' 8 px, and a ``pretrained`` request with
      ``HF_HUB_OFFLINE=1`` and an empty hub cache: both refused.

    Read-only.
    """
    timm = pytest.importorskip("timm")
    import torch

    from tests.helpers import FOLDER_CONFIG, run_cases, write_digit_photos

    save_dir = tmp_path_factory.mktemp("timm_runs")
    short = ["--trainer.limit_val_batches=1", "--test_after_fit=false"]
    cases = {}
    for name, (backbone, extra) in TIMM_FITS.items():
        fit = [*fast_fit_args(save_dir, epochs=2, name=name), *short, "--trainer.limit_train_batches=3"]
        cases[name] = [*fit, f"--model.backbone={backbone}", *extra]
    start = save_dir / "resnet" / "version_0" / "checkpoints" / "last.ckpt"
    fit = [*fast_fit_args(save_dir, epochs=1, name="resnet_init"), *short, "--trainer.limit_train_batches=2"]
    cases["resnet_init"] = [*fit, "--model.backbone=timm/resnet10t", f"--model.init_from={start}"]
    root = write_digit_photos(save_dir / "photos", {"": [10, 10, 10]}, sizes=(64, 96))
    weights = save_dir / "convnext_atto.pth"
    torch.save(timm.create_model("convnext_atto").state_dict(), weights)
    fit = fast_fit_args(save_dir, epochs=1, name="convnext", batch_size=8, configs=[FOLDER_CONFIG])
    cases["convnext"] = [*fit, *short, f"--data.root={root}", "--data.image_size=64", "--trainer.limit_train_batches=2",
                         "--model.backbone=timm/convnext_atto", f"--model.weights={weights}"]  # fmt: skip
    refused = fast_fit_args(save_dir, epochs=1, name="refused")
    cases["too_small"] = [*refused, "--model.backbone=timm/convnext_atto"]
    cases["offline"] = [*refused, "--model.backbone=timm/resnet10t", "--model.weights=pretrained"]
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(save_dir / "empty_hub_cache")}
    results = run_cases(save_dir, [{"argv": argv, "env": env} for argv in cases.values()])
    runs = {name: {**result, "run": save_dir / name / "version_0"} for name, result in zip(cases, results, strict=True)}
    for name in ("resnet", "mobilenetv3", "resnet_init", "convnext"):
        assert runs[name]["code"] == 0, f"{name}:\n{runs[name]['stderr'][-4000:]}"
    return {**runs, "weights": weights, "root": root}


#: Verification and calibration sizes for the timm exports: enough images for the figures, a fraction of the time.
TIMM_EXPORT_ARGS = ["--verify_samples", "64", "--calibration_images", "32"]


@pytest.fixture(scope="session")
def timm_exports(timm_runs, tmp_path_factory) -> dict[str, dict]:
    """Every format of each timm family exported (and verified) once, in a fresh process, and ConvNeXt's photo run
    as ``weights.pt`` (its ``model.json``) and ONNX; then ``infer`` with ConvNeXt's checkpoint and with its ONNX
    over mixed-size photos in the same process (its bicubic resize and crop fraction, as the backbone expects):
    ``{name: {"out": export folder, "code", "stdout", "stderr"}}`` plus ``"infer"``: ``{"ckpt"|"onnx": csv}``.
    Here, not in the deploy extra's conftest, so that serve's tests share the one export."""
    from tests.helpers import run_cases
    from tests.photos import write_mixed_photos

    work = tmp_path_factory.mktemp("timm_exports")
    runs = {name: timm_runs[name]["run"] for name in ("resnet", "mobilenetv3", "convnext")}
    cases = []
    for name, run in runs.items():
        formats = ["--formats", "weights", "onnx"] if name == "convnext" else []  # what infer's check needs
        ckpt = str(run / "checkpoints" / "last.ckpt")
        cases.append({"argv": ["export", "--ckpt_path", ckpt, "--out", str(work / name), *formats, *TIMM_EXPORT_ARGS]})
    photos = work / "mixed_photos"
    write_mixed_photos(photos, n=10)
    csvs = {"ckpt": work / "ckpt.csv", "onnx": work / "onnx.csv"}
    for kind, model in (
        ("ckpt", runs["convnext"] / "checkpoints" / "last.ckpt"),
        ("onnx", work / "convnext" / "model.onnx"),
    ):
        cases.append({"argv": ["infer", "--model", str(model), "--input", str(photos), "--output", str(csvs[kind])]})
    results = run_cases(work, [{**case, "env": {"HF_HUB_OFFLINE": "1"}} for case in cases])
    exports = {name: {**result, "out": work / name} for name, result in zip(runs, results, strict=False)}
    for result in results[len(runs) :]:
        assert result["code"] == 0, result["stderr"][-3000:]
    return {**exports, "infer": csvs}


@pytest.fixture(scope="session")
def segmentation_export(tmp_path_factory) -> dict:
    """A short segmentation fit (4 epochs on 600 digit canvases, configs/task/segmentation.yaml) and its default
    ``litstarter export`` of ``last.ckpt``, each in a subprocess, shared by deploy's and serve's tests:
    ``{"run", "export", "code", "stdout", "stderr"}`` (the export's exit code and output). Read-only."""
    from tests.helpers import CONFIGS, run_litstarter

    work = tmp_path_factory.mktemp("segmentation")
    configs = [CONFIGS / "data" / "digit_segmentation.yaml", CONFIGS / "task" / "segmentation.yaml"]
    fit = [*fast_fit_args(work / "runs", epochs=4, name="seg", configs=configs), "--data.init_args.size=600"]
    run_litstarter(fit, timeout=600)
    run = work / "runs" / "seg" / "version_0"
    export = work / "export"
    argv = ["export", "--ckpt_path", str(run / "checkpoints" / "last.ckpt"), "--out", str(export)]
    proc = run_litstarter(argv, timeout=600, check=False)  # its exit code is a test's to check
    return {"run": run, "export": export, "code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


@pytest.fixture(scope="session")
def multilabel_runs(tmp_path_factory) -> dict[str, Path]:
    """Two short multi-label fits on one folder of digit composites, in one subprocess: from the ``;``-separated
    labels file (``labels``) and from the one-column-per-label file (``columns``). Returns their run folders and
    ``root``, the image folder. Read-only."""
    from tests.helpers import multilabel_fit_args, run_cases, write_digit_composites

    work = tmp_path_factory.mktemp("multilabel")
    root = write_digit_composites(work / "composites", images=240, seed=1)
    cases = [
        {"argv": multilabel_fit_args(work / "runs", root, "labels.csv", "labels"), "env": {}},
        {"argv": multilabel_fit_args(work / "runs", root, "labels_columns.csv", "columns"), "env": {}},
    ]
    results = run_cases(work, cases)
    for result in results:
        assert result["code"] == 0, result["stderr"][-3000:]
    runs = {name: work / "runs" / name / "version_0" for name in ("labels", "columns")}
    return {**runs, "root": root, "output": "\n".join(r["stderr"] + r["stdout"] for r in results)}
