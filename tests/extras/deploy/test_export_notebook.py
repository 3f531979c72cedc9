"""The export notebook runs top to bottom: a short fit, `litstarter export`, and onnxruntime agreeing with eager."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_notebooks import run_notebook
from tests.helpers import REPO

pytestmark = pytest.mark.slow  # end to end


def test_export_notebook_runs_top_to_bottom(tmp_path: Path, monkeypatch) -> None:
    outputs = run_notebook(REPO / "notebooks" / "02_export.ipynb", tmp_path, monkeypatch)
    assert "onnxruntime predictions match the eager model" in outputs
    # The export cell prints the contract a client must follow (it printed {} when it read keys model.json lacks).
    assert "'shape': ['batch', 1, 8, 8]" in outputs and "'dtype': 'uint8'" in outputs
    assert "'image_size': [8, 8]" in outputs and "'color_mode': 'L'" in outputs
    assert list((tmp_path / "runs").rglob("model.onnx"))
