"""litstarter export: every format round-trips and is verified; bad input is refused; nothing half-written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from litstarter._engine import leftovers
from litstarter._engine.images.preprocess import center_crop_array, resize_size_for
from litstarter.data import DigitsDataModule
from litstarter.extras.deploy import export, export_data, export_job, quantize
from litstarter.extras.deploy.backends import open_model
from litstarter.extras.deploy.contract import SIDECAR_NAME, ModelContract
from tests.helpers import best_checkpoint, make_image_folder

FP32 = ["weights.pt", "model.ts", "model.pt2", "model.onnx"]


def test_every_format_exports_and_verifies(digits_export):
    assert digits_export.rc == 0, digits_export.stderr
    out = digits_export.out
    report = json.loads((out / export.REPORT_NAME).read_text())
    assert report["passed"]
    assert set(report["artifacts"]) == {*FP32, "model.int8.onnx"}
    assert report["verification"]["split"] == "test"
    assert report["verification"]["batch_sizes"] == {"32": 270, "1": 64}  # the whole digits test split at 32
    for name in FP32:
        figures = report["artifacts"][name]
        assert (out / name).is_file()
        assert figures["passed"] and figures["top1_agreement"] == 1.0, (name, figures)
        assert set(figures["by_batch_size"]) == {"1", "32"}
        assert figures["max_abs_diff"] <= 1e-4, (name, figures)
        assert figures["accuracy"] == pytest.approx(report["eager"]["accuracy"])
    int8 = report["artifacts"]["model.int8.onnx"]
    assert int8["quantization"]["mode"] == "static_qdq" and int8["quantization"]["per_channel"]
    assert int8["accuracy_drop"] <= 0.01
    assert report["eager"]["accuracy"] > 0.8  # a trained model, so agreement means something
    # The printed table names every artifact; no temporary file is left behind.
    for name in [*FP32, "model.int8.onnx"]:
        assert name in digits_export.stdout
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]


def test_sidecar_is_the_full_input_contract(digits_export, digits_run):
    sidecar = json.loads((digits_export.out / SIDECAR_NAME).read_text())
    assert sidecar["input"] == {
        "name": "input",
        "dtype": "uint8",
        "layout": "NCHW",
        "shape": ["batch", 1, 8, 8],
        "value_range": [0, 255],
    }
    assert sidecar["output"]["name"] == "logits"
    assert sidecar["class_names"] == [str(d) for d in range(10)]
    # Digits are stored at 8x8: files are not resized up to a 9x9 "cache size" and cropped back.
    assert sidecar["preprocessing"]["resize_size"] == [8, 8] == sidecar["preprocessing"]["image_size"]
    assert sidecar["normalization"]["applied_in_graph"] is True
    mean, std = DigitsDataModule().normalization()
    assert sidecar["normalization"]["mean"] == pytest.approx(mean) and sidecar["normalization"]["std"] == pytest.approx(
        std
    )
    assert sidecar["artifacts"]["model.onnx"]["opset"] >= 18
    assert sidecar["artifacts"]["model.int8.onnx"]["quantization"]["mode"] == "static_qdq"
    ModelContract.from_dict(sidecar)  # what infer and clients read


def test_artifacts_carry_their_contract_without_the_sidecar(digits_export, tmp_path):
    expected = ModelContract.from_json((digits_export.out / SIDECAR_NAME).read_text())
    for name in ["model.onnx", "model.int8.onnx", "model.ts", "model.pt2"]:
        alone = tmp_path / name
        shutil.copy(digits_export.out / name, alone)
        backend = open_model(alone, trust_model=name == "model.ts")  # TorchScript is opt-in
        assert backend.contract == expected, name
        images = np.zeros((3, 1, 8, 8), dtype=np.uint8)
        assert backend(images).shape == (3, 10)  # dynamic batch: exported at batch 2


def test_torchscript_deprecation_is_warned_once(digits_export):
    ours = [w for w in digits_export.warnings if "TorchScript is deprecated" in w]
    assert len(ours) <= 1  # once per process: 0 if an earlier test in this process already showed it
    assert not [w for w in digits_export.warnings if w.startswith("`torch.jit.")]  # torch's own, per call


def test_existing_export_is_not_overwritten(digits_export, capsys):
    before = {p.name: p.stat().st_mtime_ns for p in digits_export.out.iterdir()}
    rc = export.main(["--ckpt_path", str(digits_export.ckpt), "--out", str(digits_export.out)])
    assert rc == 2
    err = capsys.readouterr().err
    assert str(digits_export.out) in err and "--overwrite" in err
    assert {p.name: p.stat().st_mtime_ns for p in digits_export.out.iterdir()} == before


def test_overwrite_replaces_the_whole_export(digits_export, tmp_path):
    out = tmp_path / "export"
    shutil.copytree(digits_export.out, out)
    rc = export.main(["--ckpt_path", str(digits_export.ckpt), "--out", str(out), "--formats", "weights", "--overwrite"])
    assert rc == 0
    # Artifacts of the previous export are removed: the folder never mixes two exports under one model.json.
    assert sorted(p.name for p in out.iterdir()) == [export.REPORT_NAME, SIDECAR_NAME, "weights.pt"]
    assert list(json.loads((out / SIDECAR_NAME).read_text())["artifacts"]) == ["weights.pt"]
    state = torch.load(out / "weights.pt", weights_only=True)
    assert "head.weight" in state and all(isinstance(v, torch.Tensor) for v in state.values())


def test_artifact_that_disagrees_is_rejected(digits_export, tmp_path, monkeypatch, capsys):
    real_write = export_job.write_weights

    def write_wrong_weights(net, path, contract, example):
        info = real_write(net, path, contract, example)
        state = torch.load(path, weights_only=True)
        state["head.bias"][3] += 5.0  # a different model: class 3 wins far more often
        torch.save(state, path)
        return info

    monkeypatch.setattr(export_job, "write_weights", write_wrong_weights)
    out = tmp_path / "export"
    rc = export.main(["--ckpt_path", str(digits_export.ckpt), "--out", str(out), "--formats", "weights"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "weights.pt" in err and "max |diff|" in err and "top-1 agreement" in err
    assert not (out / "weights.pt").exists()  # refused: never renamed into place
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # and no temporary left
    report = json.loads((out / export.REPORT_NAME).read_text())
    assert report["passed"] is False and report["artifacts"]["weights.pt"]["max_abs_diff"] >= 4.9
    assert json.loads((out / SIDECAR_NAME).read_text())["artifacts"] == {}


def test_int8_falls_back_to_dynamic_only_when_static_fails(digits_export, tmp_path, monkeypatch):
    def unsupported(*args, **kwargs):
        raise RuntimeError("static quantization is not supported for this graph")

    monkeypatch.setattr(quantize, "quantize_static", unsupported)
    contract = ModelContract.from_json((digits_export.out / SIDECAR_NAME).read_text())
    calibration = DigitsDataModule().splits()["train"][0][:64]
    info = quantize.quantize_int8(digits_export.out / "model.onnx", tmp_path / "m.int8.onnx", calibration, contract)
    assert info["quantization"]["mode"] == "dynamic"
    assert "not supported for this graph" in info["quantization"]["why_not_static"]
    logits = open_model(tmp_path / "m.int8.onnx")(calibration[:4])
    assert logits.shape == (4, 10) and np.isfinite(logits).all()


def test_missing_checkpoint_names_the_path(tmp_path, capsys):
    missing = tmp_path / "runs" / "checkpoints" / "nope.ckpt"
    assert export.main(["--ckpt_path", str(missing)]) == 2
    assert f"checkpoint not found: {missing}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"num_classes": 5, "class_names": list("abcde")}, "head.weight: file (10, 128) vs model (5, 128)"),
        ({"backbone_kwargs": {"widths": [16, 32]}}, "unexpected keys: backbone.stages.2"),
    ],
)
def test_checkpoint_that_does_not_fit_its_architecture_names_the_keys(digits_export, tmp_path, capsys, change, named):
    checkpoint = torch.load(digits_export.ckpt, weights_only=True)
    checkpoint["hyper_parameters"].update(change)
    bad = tmp_path / "checkpoints" / "other.ckpt"
    bad.parent.mkdir()
    torch.save(checkpoint, bad)
    assert export.main(["--ckpt_path", str(bad)]) == 1  # a checkpoint that cannot be used: bad input
    err = capsys.readouterr().err
    assert str(bad) in err and named in err
    assert not (tmp_path / "export").exists()


def test_default_out_is_the_runs_export_folder(digits_run, tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    shutil.copy(digits_run / "config.yaml", run / "config.yaml")
    ckpt = shutil.copy(best_checkpoint(digits_run), run / "checkpoints")
    assert export.main(["--ckpt_path", str(ckpt), "--formats", "weights"]) == 0
    assert sorted(p.name for p in (run / "export").iterdir()) == [export.REPORT_NAME, SIDECAR_NAME, "weights.pt"]


def test_export_removes_the_staging_folders_of_killed_exports(digits_run, tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    shutil.copy(digits_run / "config.yaml", run / "config.yaml")
    ckpt = shutil.copy(best_checkpoint(digits_run), run / "checkpoints")
    killed = subprocess.Popen([sys.executable, "-c", "pass"])
    killed.wait()  # an export whose process is gone
    host = leftovers.this_host()
    dead = run / f".export.{killed.pid}@{host}.q1w2e3.staging"
    foreign = run / ".export.4242@another-node.a1s2d3.staging"  # a live run elsewhere, maybe: kept for a day
    for folder in (dead, foreign):
        folder.mkdir()
        (folder / "model.onnx").write_bytes(b"half an export")
    assert export.main(["--ckpt_path", str(ckpt), "--formats", "weights"]) == 0
    assert not dead.exists() and foreign.exists()
    assert sorted(p.name for p in run.iterdir()) == [foreign.name, "checkpoints", "config.yaml", "export"]


def test_default_out_and_config_sit_beside_a_checkpoint_outside_checkpoints(digits_run, tmp_path):
    run = tmp_path / "shared" / "model_a"  # a checkpoint handed over on its own, with its config beside it
    run.mkdir(parents=True)
    shutil.copy(digits_run / "config.yaml", run / "config.yaml")
    ckpt = shutil.copy(best_checkpoint(digits_run), run / "model.ckpt")
    assert export.main(["--ckpt_path", str(ckpt), "--formats", "weights"]) == 0
    assert sorted(p.name for p in (run / "export").iterdir()) == [export.REPORT_NAME, SIDECAR_NAME, "weights.pt"]
    assert not (tmp_path / "shared" / "export").exists()


def test_exporter_that_raises_rejects_that_artifact_and_overwrite_keeps_nothing_old(
    digits_export, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "export"
    shutil.copytree(digits_export.out, out)

    def broken_export(net, path, contract, example):
        raise RuntimeError("torch.export cannot trace this model")

    monkeypatch.setattr(export_job, "write_exported", broken_export)
    args = ["--ckpt_path", str(digits_export.ckpt), "--out", str(out), "--formats", "weights", "pt2", "ts"]
    assert export.main([*args, "--overwrite"]) == 1
    captured = capsys.readouterr()
    assert "model.pt2: export failed: RuntimeError: torch.export cannot trace this model" in captured.err
    assert "model.pt2" in captured.out and "REJECTED" in captured.out  # the table still shows every artifact
    # The new export only: none of the old artifacts stays beside the new model.json, and no staging is left.
    assert sorted(p.name for p in out.iterdir()) == sorted([export.REPORT_NAME, SIDECAR_NAME, "model.ts", "weights.pt"])
    assert sorted(json.loads((out / SIDECAR_NAME).read_text())["artifacts"]) == ["model.ts", "weights.pt"]
    report = json.loads((out / export.REPORT_NAME).read_text())
    assert report["passed"] is False and report["artifacts"]["model.ts"]["passed"]
    assert "cannot trace" in report["artifacts"]["model.pt2"]["error"]
    assert sorted(report["removed_stale"]) == ["model.int8.onnx", "model.onnx", "model.pt2"]
    assert [p.name for p in tmp_path.iterdir()] == ["export"]


def test_export_stopped_part_way_leaves_the_previous_export_as_it_was(digits_export, tmp_path, monkeypatch):
    out = tmp_path / "export"
    shutil.copytree(digits_export.out, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    class Killed(BaseException):  # like KeyboardInterrupt: not an artifact failure, the whole export stops
        pass

    def killed(net, path, contract, example):
        raise Killed

    monkeypatch.setattr(export_job, "write_torchscript", killed)
    with pytest.raises(Killed):  # weights.pt was already written and verified when ts was stopped
        export.main(
            ["--ckpt_path", str(digits_export.ckpt), "--out", str(out), "--formats", "weights", "ts", "--overwrite"]
        )
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["export"]


def test_int8_quantizes_the_onnx_verified_in_the_same_run(digits_export, tmp_path, monkeypatch):
    onnx_exports, quantized_from = [], []
    real_write_onnx, real_quantize = export_job.write_onnx, export_job.quantize_int8

    def counting_write_onnx(net, path, *args, **kwargs):
        onnx_exports.append(path.name)
        return real_write_onnx(net, path, *args, **kwargs)

    def recording_quantize(fp32_path, *args, **kwargs):
        quantized_from.append(fp32_path.read_bytes())
        return real_quantize(fp32_path, *args, **kwargs)

    monkeypatch.setattr(export_job, "write_onnx", counting_write_onnx)
    monkeypatch.setattr(export_job, "quantize_int8", recording_quantize)
    out = tmp_path / "export"
    args = ["--ckpt_path", str(digits_export.ckpt), "--out", str(out), "--formats", "onnx", "int8"]
    assert export.main([*args, "--calibration_images", "64"]) == 0
    assert len(onnx_exports) == 1  # exported once, not again for int8
    assert quantized_from == [(out / "model.onnx").read_bytes()]


def test_stratified_sample_covers_every_class_in_proportion():
    labels = np.repeat(np.arange(5), [40, 40, 40, 40, 240])  # ordered by class, like an image-folder split
    picked = export_data.stratified_sample(labels, 40, seed=0)
    assert len(set(picked.tolist())) == 40
    counts = np.bincount(labels[picked], minlength=5)
    assert counts.tolist() == [4, 4, 4, 4, 24]  # each class in proportion to its size
    assert np.bincount(labels[picked[:10]], minlength=5).tolist() == [1, 1, 1, 1, 6]  # and so is a prefix
    assert np.array_equal(picked, export_data.stratified_sample(labels, 40, seed=0))  # seeded
    assert not np.array_equal(picked, export_data.stratified_sample(labels, 40, seed=1))
    assert sorted(export_data.stratified_sample(labels, 1000)) == list(range(len(labels)))  # more than there are: all


def test_verification_and_calibration_images_span_the_classes_of_a_class_ordered_split(tmp_path):
    counts = {"ant": 8, "bee": 8, "cat": 8}
    root = make_image_folder(tmp_path / "root", {"train": counts, "val": counts, "test": counts}, size=(10, 10))
    init = {"root": str(root), "image_size": 8, "cache_dir": str(tmp_path / "cache"), "cache_workers": 0}
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps({"data": {"class_path": "litstarter.data.ImageFolderDataModule", "init_args": init}}))
    hparams = {"class_names": list(counts), "in_channels": 3, "image_size": (8, 8), "resize_size": resize_size_for(8)}
    data = export_data.load_export_data(config, hparams, verify_samples=6, calibration_images=6)
    assert np.bincount(data.test_labels, minlength=3).tolist() == [2, 2, 2]  # not the first 6 (all "ant")
    assert len(data.calibration_images) == 6
    # Calibration sees what inference sees: the train split's eval view (its items are augmented), the centre crop.
    cache = export_data.datamodule_from_config(config).load_cache()
    train = cache.images("train").array()[export_data.stratified_sample(cache.targets("train"), 6, 0)]
    np.testing.assert_array_equal(data.calibration_images, center_crop_array(train, (8, 8)))
