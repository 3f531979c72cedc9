"""Hostile and careless model files and outputs through the real CLI, in one subprocess: each refusal is one named
sentence, exit 1 or 2, no traceback, and nothing is overwritten or left half-written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import DROP_ROOT, assert_refused, run_cases, write_image

pytestmark = pytest.mark.slow  # end to end


def test_bad_model_files_and_outputs_for_infer_and_export(digits_export, tmp_path: Path) -> None:
    """infer --output refusals, model.json against the model, corrupt artifacts, unreadable (mode 000) ones, export
    --out into a read-only folder, one file given three times; permissions with root's overrides dropped."""
    ckpt, export = digits_export.ckpt, digits_export.out
    images = tmp_path / "images"
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
    resized = variant("resized", lambda c: (c["preprocessing"].update(image_size=[6, 6]),
                                            c["preprocessing"]["crop"].update(size=[6, 6])))  # fmt: skip
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    for name, data in [("model.onnx", b"\x08\x07garbage"), ("model.ts", b"PK\x03\x04junk"), ("model.pt2", b"junk")]:
        (corrupt / name).write_bytes(data)
    shutil.copy(export / "model.json", corrupt / "model.json")
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    read_only.chmod(0o555)
    unreadable = tmp_path / "unreadable"  # mode 000: a permission problem, not a corrupt file
    unreadable.mkdir()
    for source in (export / "model.onnx", export / "weights.pt", export / "model.json", ckpt):
        shutil.copy(source, unreadable / source.name)
        (unreadable / source.name).chmod(0o444 if source.name == "model.json" else 0)
    locked = {name: unreadable / name for name in ("model.onnx", "weights.pt", ckpt.name)}

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
        infer(export / "model.onnx", tmp_path / "ok.csv"),
        *(infer(model, tmp_path / "a.csv") for model in locked.values()),
        {"argv": ["export", "--ckpt_path", str(locked[ckpt.name]), "--out", str(tmp_path / "x"), "--formats", "onnx"]},
        {
            "argv": [
                "infer",
                "--model",
                str(export / "model.onnx"),
                "--input",
                str(images),
                str(inputs[1]),
                str(images / "." / inputs[1].name),
                "--output",
                str(tmp_path / "once.csv"),
            ]
        },
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
    assert results[10]["code"] == 0, results[10]["stderr"][-2000:]
    assert len((tmp_path / "ok.csv").read_text().splitlines()) == 1 + len(inputs)
    for result, model in zip(results[11:15], [*locked.values(), locked[ckpt.name]], strict=True):
        message = assert_refused(result, 2, str(model), "ermission denied")
        assert "corrupt" not in message.replace("not corrupt", "") and "cannot load" not in message
    # A folder and a file in it, twice (once by another spelling): one row per file, and a note saying so.
    assert results[15]["code"] == 0, results[15]["stderr"][-2000:]
    rows = (tmp_path / "once.csv").read_text().splitlines()[1:]
    assert sorted(row.split(",")[0] for row in rows) == sorted(map(str, inputs))
    assert "3 of 3 file(s) predicted" in results[15]["stdout"] and "counted 2 file(s) once" in results[15]["stderr"]
