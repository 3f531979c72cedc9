"""A client that follows model.json alone reproduces `litstarter infer`: the NumPy reference
(examples/preprocess_reference.py) on 20 mixed-size, mixed-mode photos (grey, RGB, RGBA, palette, 16-bit,
EXIF-rotated): the same input arrays bit for bit, the same top-1, probabilities within 1e-3; and the Node client
(examples/node_client/) on onnxruntime-node where its node_modules is installed."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess

import numpy as np
import pytest

from litstarter.extras.deploy import export, infer
from litstarter.extras.deploy.contract import ModelContract
from tests.extras.deploy.helpers import read_csv
from tests.helpers import DEFAULT_CONFIG, REPO, best_checkpoint, run_cli
from tests.photos import sample_photos, tile_crops, write_mixed_photos

pytestmark = pytest.mark.slow  # a fit and an export

NODE_CLIENT = REPO / "examples" / "node_client"


def reference_module():
    spec = importlib.util.spec_from_file_location("preprocess_reference", REPO / "examples" / "preprocess_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """An ONNX export of a short fit on photo tiles (china / flower), infer's rows on 20 mixed photos, the files."""
    tmp = tmp_path_factory.mktemp("reference")
    for name, photo in sample_photos().items():
        for i, tile in enumerate(tile_crops(photo, 4, 5, seed=3)):
            (tmp / "tiles" / name).mkdir(parents=True, exist_ok=True)
            tile.save(tmp / "tiles" / name / f"{i:02d}.png")
    run_cli([
        "fit", "--config", str(DEFAULT_CONFIG), "--config", str(DEFAULT_CONFIG.parent / "data" / "image_folder.yaml"),
        f"--data.init_args.root={tmp / 'tiles'}", "--data.init_args.image_size=32",
        f"--data.init_args.cache_dir={tmp / 'cache'}", "--data.init_args.num_workers=0",
        "--model.backbone_kwargs={widths: [8, 16]}", "--trainer.max_epochs=6", "--data.init_args.batch_size=8",
        "--baseline=false",
        f"--trainer.logger.init_args.save_dir={tmp}", "--trainer.enable_model_summary=false",
    ])  # fmt: skip
    out = tmp / "export"
    ckpt = best_checkpoint(tmp / "image_folder" / "version_0")
    assert export.main(["--ckpt_path", str(ckpt), "--out", str(out), "--formats", "onnx"]) == 0
    files = write_mixed_photos(tmp / "mixed", 20)
    csv = tmp / "preds.csv"
    assert infer.main(["--model", str(out / "model.onnx"), "--input", *map(str, files), "--output", str(csv)]) == 0
    rows = {row["file"]: row for row in read_csv(csv)}
    return out, files, [rows[str(f)] for f in files]


def infer_probs(row: dict, names: list[str]) -> np.ndarray:
    found = {row[f"top{i}"]: float(row[f"top{i}_prob"]) for i in range(1, len(names) + 1)}
    return np.array([found[name] for name in names])


def test_the_numpy_reference_agrees_with_infer(exported) -> None:
    import onnxruntime as ort

    out, files, rows = exported
    contract = json.loads((out / "model.json").read_text())
    names, reference = contract["class_names"], reference_module()
    session = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    ours = ModelContract.from_dict(contract)
    for file, row in zip(files, rows, strict=True):
        array = reference.preprocess(file, contract)  # (C, H, W) uint8, from model.json alone
        np.testing.assert_array_equal(array, ours.load_image(file), err_msg=file.name)
        logits = session.run(None, {contract["input"]["name"]: array[None]})[0][0]
        probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        assert names[int(probs.argmax())] == row["pred"], file.name
        assert np.abs(probs - infer_probs(row, names)).max() <= 1e-3, file.name


def test_the_numpy_reference_resizes_bicubic_as_infer_does(exported) -> None:
    """A timm backbone's contract asks for bicubic: the reference, reading model.json alone, still gives infer's
    input arrays bit for bit."""
    from litstarter.extras.deploy.preprocessing import resize_fields

    out, files, _ = exported
    contract = json.loads((out / "model.json").read_text())
    resize = contract["preprocessing"]["resize"]
    contract["preprocessing"]["resize"] = resize_fields(tuple(resize["size"]), "bicubic")
    ours = ModelContract.from_dict(contract)
    assert ours.interpolation == "bicubic"
    for file in files:
        np.testing.assert_array_equal(reference_module().preprocess(file, contract), ours.load_image(file), file.name)


@pytest.mark.skipif(
    shutil.which("node") is None or not (NODE_CLIENT / "node_modules" / "onnxruntime-node").is_dir(),
    reason="node or examples/node_client/node_modules is missing (make test installs it where npm is: make"
    " node-client, or cd examples/node_client && npm ci --ignore-scripts)",
)
def test_the_node_client_agrees_with_infer(exported) -> None:
    out, files, rows = exported
    proc = subprocess.run(
        ["node", str(NODE_CLIENT / "classify.js"), str(out / "model.json"), *map(str, files)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    names = json.loads((out / "model.json").read_text())["class_names"]
    for file, row, line in zip(files, rows, proc.stdout.splitlines(), strict=True):
        node = json.loads(line)
        gap = np.abs(np.array(node["probs"]) - infer_probs(row, names)).max()
        # PNG (pngjs) and JPEG (sharp: libjpeg-turbo, as PIL) files decode to the same pixels: float rounding is left
        assert gap <= 1e-4, (file.name, gap)
        assert node["pred"] == row["pred"], file.name
