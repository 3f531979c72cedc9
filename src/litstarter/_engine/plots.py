"""Figures drawn with matplotlib's Agg canvas (files only: no display, no pyplot state)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn, not when a fit starts
    from matplotlib.figure import Figure

# Above these sizes the cell counts, then the tick labels, become unreadable; the colours still tell.
ANNOTATE_MAX_CLASSES = 20
TICKS_MAX_CLASSES = 50


def confusion_matrix_figure(matrix: torch.Tensor, class_names: Sequence[str], title: str) -> Figure:
    """A figure of a ``(K, K)`` confusion matrix (rows: true class, columns: predicted class).

    Colour is the row-normalised rate (the recall on the diagonal), so rare classes are as visible as
    common ones; the cells show raw counts.

    Args:
        matrix: ``(K, K)`` counts.
        class_names: ``K`` names in label order.
        title: Figure title.
    """
    counts = matrix.detach().cpu().long()
    k = counts.shape[0]
    rates = counts.float() / counts.sum(dim=1, keepdim=True).clamp(min=1)
    size = min(4 + 0.4 * k, 16)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(size, size), dpi=100)
    FigureCanvasAgg(fig)  # the Agg (file-only) canvas: no display, no pyplot state
    ax = fig.add_subplot()
    image = ax.imshow(rates.numpy(), cmap="Blues", vmin=0.0, vmax=1.0)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="fraction of the true class")
    if k <= TICKS_MAX_CLASSES:
        ax.set_xticks(range(k), [str(n) for n in class_names], rotation=90 if k > 10 else 0)
        ax.set_yticks(range(k), [str(n) for n in class_names])
    if k <= ANNOTATE_MAX_CLASSES:
        for i in range(k):
            for j in range(k):
                if counts[i, j]:
                    color = "white" if rates[i, j] > 0.5 else "black"
                    ax.text(j, i, str(int(counts[i, j])), ha="center", va="center", fontsize=8, color=color)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(title)
    fig.tight_layout()
    return fig
