"""The quick-start notebook runs top to bottom (every notebook is committed without outputs)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.helpers import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def run_notebook(path: Path, tmp_path: Path, monkeypatch, epochs: int = 3) -> str:
    """Execute ``path`` on a small training budget; its code cells' printed text."""
    nb = nbformat.read(path, as_version=4)
    monkeypatch.setenv("QUICKSTART_EPOCHS", str(epochs))  # a small budget; the default trains for real
    monkeypatch.setenv("QUICKSTART_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    return "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, "strip outputs (nbstripout) before committing"


def test_quickstart_notebook_runs_top_to_bottom(tmp_path: Path, monkeypatch) -> None:
    outputs = run_notebook(REPO / "notebooks" / "01_quickstart.ipynb", tmp_path, monkeypatch)
    assert "'test/acc':" in outputs and "test images misclassified" in outputs
    assert list((tmp_path / "runs").rglob("metrics.json"))
