"""The quick-start notebook runs top to bottom (committed without outputs)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tests.helpers import REPO

NOTEBOOK = REPO / "notebooks" / "01_quickstart.ipynb"


def test_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, "strip outputs (nbstripout) before committing"


def test_quickstart_notebook_runs_top_to_bottom(tmp_path: Path, monkeypatch) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.setenv("QUICKSTART_EPOCHS", "3")  # a small budget; the default trains for real
    monkeypatch.setenv("QUICKSTART_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)
    assert "onnxruntime predictions match the eager model" in outputs
    # The export cell prints the contract a client must follow (it printed {} when it read keys model.json lacks).
    assert "'shape': ['batch', 1, 8, 8]" in outputs and "'dtype': 'uint8'" in outputs
    assert "'image_size': [8, 8]" in outputs and "'color_mode': 'L'" in outputs
    assert (tmp_path / "runs").exists() and list((tmp_path / "runs").rglob("model.onnx"))
