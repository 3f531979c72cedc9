"""Figures drawn with matplotlib's Agg canvas (files only: no display, no pyplot state)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn, not when a fit starts
    from matplotlib.figure import Figure

__all__ = ["box_overlays", "class_colours", "confusion_matrix_figure", "mask_overlays"]

# Above these sizes the cell counts, then the tick labels, become unreadable; the colours still tell.
_ANNOTATE_MAX_CLASSES = 20
_TICKS_MAX_CLASSES = 50


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
    if k <= _TICKS_MAX_CLASSES:
        ax.set_xticks(range(k), [str(n) for n in class_names], rotation=90 if k > 10 else 0)
        ax.set_yticks(range(k), [str(n) for n in class_names])
    if k <= _ANNOTATE_MAX_CLASSES:
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


def class_colours(num_classes: int) -> torch.Tensor:
    """``(num_classes, 3)`` RGB in 0..1: class 0 (the background) black, the others spread around the hue circle."""
    import colorsys

    hues = [colorsys.hsv_to_rgb(i / max(num_classes - 1, 1) * 0.83, 0.9, 1.0) for i in range(num_classes - 1)]
    return torch.tensor([(0.0, 0.0, 0.0), *hues], dtype=torch.float32)[:num_classes]


def mask_overlays(images: torch.Tensor, predicted: torch.Tensor, truth: torch.Tensor, num_classes: int) -> torch.Tensor:
    """One RGB grid ``(3, n * H, 3 * W)`` in 0..1: per image a row of the image, its predicted mask over it and its
    true mask over it (half and half; the background left as it is, ignored pixels grey).

    Args:
        images: ``(n, C, H, W)`` uint8.
        predicted: ``(n, H, W)`` class indices.
        truth: ``(n, H, W)`` class indices (an index past the classes, such as 255, is ignored).
        num_classes: The number of classes.
    """
    grey = images.float().mean(dim=1, keepdim=True).expand(-1, 3, -1, -1) / 255.0  # (n, 3, H, W)
    colours = torch.cat([class_colours(num_classes), torch.tensor([[0.5, 0.5, 0.5]])])  # the last: ignored

    def over(masks: torch.Tensor) -> torch.Tensor:
        index = masks.long().clamp(max=num_classes)  # ignored -> the grey entry
        painted = colours[index].permute(0, 3, 1, 2)  # (n, 3, H, W)
        background = (index == 0).unsqueeze(1)
        return torch.where(background, grey, 0.5 * grey + 0.5 * painted)

    rows = torch.cat([grey, over(predicted), over(truth)], dim=3)  # (n, 3, H, 3W)
    return torch.cat(list(rows), dim=1)  # (3, n * H, 3W)


def box_overlays(images: torch.Tensor, predicted: list[torch.Tensor], truth: list[torch.Tensor]) -> torch.Tensor:
    """One RGB grid ``(3, n * H, 2 * W)`` in 0..1: per image a row of it with its predicted boxes (red) and with its
    true boxes (green).

    Args:
        images: ``(n, C, H, W)`` uint8.
        predicted: Each image's ``(m, 4)`` predicted boxes, ``x1, y1, x2, y2``.
        truth: Each image's ``(m, 4)`` true boxes.
    """
    from torchvision.utils import draw_bounding_boxes

    rgb = images.expand(-1, 3, -1, -1) if images.shape[1] == 1 else images[:, :3]
    rows = []
    for image, found, true in zip(rgb, predicted, truth, strict=True):
        left = draw_bounding_boxes(image, found.float(), colors="red")
        right = draw_bounding_boxes(image, true.float(), colors="lime")
        rows.append(torch.cat([left, right], dim=2))
    return torch.cat(rows, dim=1).float() / 255.0
