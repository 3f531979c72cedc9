"""Model files that could run code are refused before loading: crafted ``.pt2`` archives and TorchScript."""

from __future__ import annotations

import io
import json
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from litstarter.extras.deploy.artifact_safety import UntrustedModelError, check_pt2
from tests.helpers import run_litstarter


class _Marker:
    """Unpickling this creates ``path``: the stand-in for any code a pickle can run."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _rewrite(data: bytes, change) -> bytes:
    """A copy of the zip in ``data`` with ``change(name, bytes) -> bytes | None`` applied (None drops a member)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            content = change(info.filename, src.read(info.filename))
            if content is not None:
                dst.writestr(info, content)
    return out.getvalue()


def _with_pickled_weight(data: bytes, marker: Path) -> bytes:
    """Switch the first weight to ``use_pickle: true`` and put a marker-creating pickle in its place."""
    config_name = next(n for n in zipfile.ZipFile(io.BytesIO(data)).namelist() if n.endswith("weights_config.json"))
    config = json.loads(zipfile.ZipFile(io.BytesIO(data)).read(config_name))
    fqn, meta = next(iter(config["config"].items()))
    meta["use_pickle"] = True

    def change(name: str, content: bytes) -> bytes:
        if name == config_name:
            return json.dumps(config).encode()
        if name.endswith("/data/weights/" + meta["path_name"]):
            return pickle.dumps(_Marker(str(marker)))  # pickles builtins' open: no test module needed to run it
        return content

    return _rewrite(data, change)


@pytest.fixture(scope="module")
def pt2_bytes(digits_export) -> bytes:
    return (digits_export.out / "model.pt2").read_bytes()


def test_own_export_passes_the_check(pt2_bytes):
    check_pt2(Path("model.pt2"), pt2_bytes)  # raises if our own export would be refused


def test_pickled_weight_payload_is_refused_by_infer_and_never_runs(digits_export, pt2_bytes, tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil" / "model.pt2"
    evil.parent.mkdir()
    evil.write_bytes(_with_pickled_weight(pt2_bytes, marker))
    (evil.parent / "model.json").write_bytes((digits_export.out / "model.json").read_bytes())
    image = tmp_path / "x.png"
    from PIL import Image

    Image.new("L", (8, 8)).save(image)

    proc = run_litstarter(
        ["infer", "--model", str(evil), "--input", str(image), "--output", str(tmp_path / "p.csv")], check=False
    )
    assert proc.returncode == 1, proc.stderr
    assert "refusing to load" in proc.stderr and "pickled" in proc.stderr and "--trust_model" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists()
    assert not (tmp_path / "p.csv").exists()

    # The payload is real: torch.export.load itself runs it (so the refusal above is what kept it from running).
    code = f"import torch; torch.export.load({str(evil)!r})"
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert marker.exists()


def _program_change(data: bytes, edit) -> bytes:
    def change(name: str, content: bytes) -> bytes:
        if name.endswith("/models/model.json"):
            program = json.loads(content)
            edit(program)
            return json.dumps(program).encode()
        return content

    return _rewrite(data, change)


def _first_node(program: dict) -> dict:
    return program["graph_module"]["graph"]["nodes"][0]


@pytest.mark.parametrize(
    "edit, found",
    [
        (lambda p: _first_node(p).__setitem__("target", "torch.os.system"), "call target 'torch.os.system'"),
        (lambda p: p.__setitem__("guards_code", ["__import__('os').system('true')"]), "guard code"),
        (lambda p: p["range_constraints"].__setitem__("__import__('os')", {}), "shape symbol"),
    ],
    ids=["os-system-target", "guards-code", "sympify-key"],
)
def test_program_that_could_run_code_is_refused(pt2_bytes, edit, found):
    with pytest.raises(UntrustedModelError, match="could run code") as caught:
        check_pt2(Path("evil.pt2"), _program_change(pt2_bytes, edit))
    assert found in str(caught.value)


def test_sympify_expression_is_refused(pt2_bytes):
    text = zipfile.ZipFile(io.BytesIO(pt2_bytes)).read(
        next(n for n in zipfile.ZipFile(io.BytesIO(pt2_bytes)).namelist() if n.endswith("models/model.json"))
    )
    assert b'"expr_str"' in text  # our export has a dynamic batch: the check must see real expressions

    def edit(program: dict) -> None:
        def walk(node):
            if isinstance(node, dict):
                for key, value in node.items():
                    if key == "expr_str":
                        node[key] = "__import__('os').getcwd()"
                    else:
                        walk(value)
            elif isinstance(node, list):
                for value in node:
                    walk(value)

        walk(program)

    with pytest.raises(UntrustedModelError, match="shape expression"):
        check_pt2(Path("evil.pt2"), _program_change(pt2_bytes, edit))


def test_extra_members_and_pickled_sample_inputs_are_refused(pt2_bytes, tmp_path):
    root = zipfile.ZipFile(io.BytesIO(pt2_bytes)).namelist()[0].split("/")[0]
    buffer = io.BytesIO(pt2_bytes)
    with zipfile.ZipFile(buffer, "a") as z:
        z.writestr(f"{root}/data/aotinductor/model/model.so", b"\x7fELF")
    with pytest.raises(UntrustedModelError, match="unexpected archive members"):
        check_pt2(Path("evil.pt2"), buffer.getvalue())

    marker = tmp_path / "pwned"
    evil_inputs = _rewrite(
        pt2_bytes,
        lambda n, c: pickle.dumps(_Marker(str(marker))) if n.endswith("data/sample_inputs/model.pt") else c,
    )
    with pytest.raises(UntrustedModelError, match="sample inputs are not plain tensors"):
        check_pt2(Path("evil.pt2"), evil_inputs)
    assert not marker.exists()


def test_torchscript_needs_trust_model(digits_export, tmp_path):
    image = tmp_path / "x.png"
    from PIL import Image

    Image.new("L", (8, 8)).save(image)
    args = ["infer", "--model", str(digits_export.out / "model.ts"), "--input", str(image), "--output"]
    refused = run_litstarter([*args, str(tmp_path / "a.csv")], check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "TorchScript" in refused.stderr and "--trust_model" in refused.stderr
    assert not (tmp_path / "a.csv").exists()
    run_litstarter([*args, str(tmp_path / "b.csv"), "--trust_model"])
    assert (tmp_path / "b.csv").is_file()
