"""litstarter infer: the same predictions from every backend, training's preprocessing, bad files reported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from litstarter.extras.deploy import infer
from tests.extras.deploy.helpers import eager_predictions, read_csv


@pytest.fixture(scope="module")
def ckpt_predictions(digits_export, digit_files, tmp_path_factory) -> list[dict]:
    """``infer`` with the checkpoint itself over the PNG folder."""
    output = tmp_path_factory.mktemp("preds") / "ckpt.csv"
    assert (
        infer.main(
            [
                "--model",
                str(digits_export.ckpt),
                "--input",
                str(digit_files[0]),
                "--output",
                str(output),
                "--batch_size",
                "16",
            ]
        )
        == 0
    )
    return read_csv(output)


def test_infer_on_files_matches_eager_on_the_dataset(digits_export, digit_files, ckpt_predictions):
    folder, files, images = digit_files
    expected = eager_predictions(digits_export.ckpt, images)
    assert [row["file"] for row in ckpt_predictions] == [str(f) for f in files]
    # Files go through the contract's preprocessing (decode -> 8x8 -> centre-crop 8x8) and land on exactly the
    # tensors the data module served, so the predictions are the eager ones, class names and all.
    assert [row["pred"] for row in ckpt_predictions] == [str(int(c)) for c in expected]
    row = ckpt_predictions[0]
    assert list(row) == ["file", "pred", "prob", "top1", "top1_prob", "top2", "top2_prob", "top3", "top3_prob", "error"]
    for row in ckpt_predictions:
        probs = [float(row[f"top{i}_prob"]) for i in (1, 2, 3)]
        assert row["top1"] == row["pred"] and float(row["prob"]) == probs[0]
        assert probs == sorted(probs, reverse=True) and sum(probs) <= 1.0 + 1e-6 and not row["error"]


@pytest.mark.parametrize("artifact", ["weights.pt", "model.ts", "model.pt2", "model.onnx", "model.int8.onnx"])
def test_every_backend_predicts_like_the_checkpoint(digits_export, digit_files, ckpt_predictions, artifact, tmp_path):
    output = tmp_path / "preds.csv"
    rc = infer.main(
        [
            "--model",
            str(digits_export.out / artifact),
            "--input",
            str(digit_files[0]),
            "--output",
            str(output),
            "--batch_size",
            "7",
            "--topk",
            "2",
            *(["--trust_model"] if artifact == "model.ts" else []),  # TorchScript is a program: opt-in only
        ]
    )
    assert rc == 0
    rows = read_csv(output)
    assert [r["file"] for r in rows] == [r["file"] for r in ckpt_predictions]
    agreement = np.mean([a["pred"] == b["pred"] for a, b in zip(rows, ckpt_predictions, strict=True)])
    if artifact == "model.int8.onnx":
        assert agreement >= 0.95
    else:
        assert agreement == 1.0
        probs = np.array([float(r["prob"]) for r in rows])
        assert np.allclose(probs, [float(r["prob"]) for r in ckpt_predictions], atol=1e-4)


def test_bad_files_are_reported_and_the_rest_predicted(digits_export, digit_files, tmp_path, capsys):
    folder = tmp_path / "mixed"
    folder.mkdir()
    for f in digit_files[1][:3]:
        (folder / f.name).write_bytes(f.read_bytes())
    (folder / "notes.txt").write_text("not an image")
    (folder / "truncated.png").write_bytes(digit_files[1][0].read_bytes()[:40])
    (folder / ".DS_Store").write_bytes(b"\0\1")
    output = tmp_path / "preds.csv"
    rc = infer.main(["--model", str(digits_export.out / "model.onnx"), "--input", str(folder), "--output", str(output)])
    assert rc == 1
    rows = {Path(r["file"]).name: r for r in read_csv(output)}
    assert sorted(rows) == ["000.png", "001.png", "002.png", "notes.txt", "truncated.png"]  # hidden file skipped
    assert all(rows[f"00{i}.png"]["pred"] and not rows[f"00{i}.png"]["error"] for i in range(3))
    for bad in ("notes.txt", "truncated.png"):
        assert rows[bad]["pred"] == "" and rows[bad]["error"]
    err = capsys.readouterr().err
    assert "notes.txt" in err and "truncated.png" in err


def test_missing_model_and_input_are_named(digits_export, digit_files, tmp_path, capsys):
    missing = tmp_path / "nope.onnx"
    args = ["--input", str(digit_files[0]), "--output", str(tmp_path / "p.csv")]
    assert infer.main(["--model", str(missing), *args]) == 2
    assert str(missing) in capsys.readouterr().err
    assert (
        infer.main(
            [
                "--model",
                str(digits_export.out / "model.onnx"),
                "--input",
                str(tmp_path / "none"),
                "--output",
                str(tmp_path / "p.csv"),
            ]
        )
        == 2
    )
    assert str(tmp_path / "none") in capsys.readouterr().err


def test_weights_into_a_model_with_other_classes_names_the_keys(digits_export, tmp_path, capsys):
    sidecar = json.loads((digits_export.out / "model.json").read_text())
    sidecar["class_names"] = list("abcde")
    sidecar["architecture"]["num_classes"] = 5
    (tmp_path / "model.json").write_text(json.dumps(sidecar))
    (tmp_path / "weights.pt").write_bytes((digits_export.out / "weights.pt").read_bytes())
    rc = infer.main(
        ["--model", str(tmp_path / "weights.pt"), "--input", str(tmp_path), "--output", str(tmp_path / "p.csv")]
    )
    assert rc == 1  # a model file that cannot be used: bad input, not usage
    err = capsys.readouterr().err
    assert "head.weight: file (10, 128) vs model (5, 128)" in err and "head.bias" in err


def test_onnx_infer_imports_neither_torch_nor_lightning(digits_export, digit_files, ckpt_predictions, tmp_path):
    output = tmp_path / "preds.csv"
    script = textwrap.dedent(f"""
        import sys
        from litstarter.__main__ import main
        rc = main(["infer", "--model", {str(digits_export.out / "model.onnx")!r}, "--input",
                   {str(digit_files[0])!r}, "--output", {str(output)!r}])
        heavy = sorted(m for m in ("torch", "lightning", "torchvision") if m in sys.modules)
        assert not heavy, heavy
        sys.exit(rc)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [r["pred"] for r in read_csv(output)] == [r["pred"] for r in ckpt_predictions]


def test_client_with_only_onnxruntime_numpy_pillow(digits_export, digit_files, ckpt_predictions):
    """A client that knows nothing of litstarter: the artifact + model.json are enough."""
    client = textwrap.dedent("""
        import json, sys
        import numpy as np, onnxruntime as ort
        from PIL import Image

        export, files = sys.argv[1], sys.argv[2:]
        contract = json.load(open(export + "/model.json"))
        pre = contract["preprocessing"]
        (rh, rw), (h, w) = pre["resize_size"], pre["image_size"]

        def load(path):
            image = Image.open(path).convert(pre["color_mode"])
            scale = max(rh / image.height, rw / image.width)
            size = (max(rw, round(image.width * scale)), max(rh, round(image.height * scale)))
            if size != image.size:
                image = image.resize(size, Image.Resampling.BILINEAR, reducing_gap=None)
            left, top = (image.width - rw) // 2, (image.height - rh) // 2
            array = np.asarray(image.crop((left, top, left + rw, top + rh)), dtype=np.uint8)
            array = array[None] if array.ndim == 2 else array.transpose(2, 0, 1)
            top, left = (rh - h) // 2, (rw - w) // 2
            return array[:, top : top + h, left : left + w]

        session = ort.InferenceSession(export + "/model.onnx", providers=["CPUExecutionProvider"])
        batch = np.stack([load(f) for f in files])
        logits = session.run([contract["output"]["name"]], {contract["input"]["name"]: batch})[0]
        assert "torch" not in sys.modules
        print(json.dumps([contract["class_names"][i] for i in logits.argmax(1)]))
    """)
    files = [str(f) for f in digit_files[1]]
    proc = subprocess.run(
        [sys.executable, "-c", client, str(digits_export.out), *files], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [r["pred"] for r in ckpt_predictions]
