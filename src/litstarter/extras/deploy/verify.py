"""Verification of an exported artifact against the eager model: the figures, the tolerances, the table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from litstarter.extras.deploy.backends import Backend


@dataclass(frozen=True)
class Tolerances:
    """What an artifact must meet against the eager model.

    Args:
        rtol: fp32 artifacts: relative tolerance on every logit.
        atol: fp32 artifacts: absolute tolerance on every logit.
        int8_max_accuracy_drop: INT8: largest allowed drop in test accuracy, as a fraction (0.01 = 1 point).
    """

    rtol: float = 1e-3
    atol: float = 1e-5
    int8_max_accuracy_drop: float = 0.01


class ArtifactRejected(Exception):
    """An artifact outside its tolerance; carries its figures so the report can still show them."""

    def __init__(self, figures: dict) -> None:
        super().__init__("; ".join(figures["failures"]))
        self.figures = figures


def run_batches(model, images: np.ndarray, batch_size: int) -> np.ndarray:
    """Logits of ``model`` (a :class:`Backend` or an eager ``Classifier``) over ``images``, in batches."""
    outputs = []
    for start in range(0, len(images), batch_size):
        batch = images[start : start + batch_size]
        if isinstance(model, Backend):
            outputs.append(model(batch))
        else:
            with torch.inference_mode():
                outputs.append(model(torch.from_numpy(batch)).numpy())
    return np.concatenate(outputs)


def compare(
    name: str,
    outputs: dict[int, np.ndarray],
    reference: dict[int, np.ndarray],
    labels: np.ndarray,
    quantized: bool,
    tol: Tolerances,
) -> dict:
    """The figures for one artifact against eager, with a ``failures`` list naming each figure out of tolerance.

    Args:
        name: The artifact's file name.
        outputs: Batch size -> the artifact's logits on the verification images.
        reference: Batch size -> the eager logits on the same images.
        labels: Labels of the largest batch size's images.
        quantized: INT8 (accuracy tolerance) rather than fp32 (elementwise tolerance).
        tol: The tolerances.
    """
    full = max(outputs)
    diffs = [float(np.abs(outputs[b] - reference[b]).max()) for b in outputs]
    agree = [float((outputs[b].argmax(1) == reference[b].argmax(1)).mean()) for b in outputs]
    accuracy = float((outputs[full].argmax(1) == labels).mean())
    eager_accuracy = float((reference[full].argmax(1) == labels[: len(reference[full])]).mean())
    figures = {
        "max_abs_diff": max(diffs),
        "top1_agreement": min(agree),
        "accuracy": accuracy,
        "accuracy_drop": eager_accuracy - accuracy,
        "by_batch_size": {
            str(b): {"max_abs_diff": d, "top1_agreement": a} for b, d, a in zip(outputs, diffs, agree, strict=True)
        },
        "failures": [],
    }
    if quantized:
        if eager_accuracy - accuracy > tol.int8_max_accuracy_drop + 1e-12:
            figures["failures"].append(
                f"{name}: accuracy {accuracy:.4f} is {100 * (eager_accuracy - accuracy):.2f} points below eager "
                f"{eager_accuracy:.4f} (allowed: {100 * tol.int8_max_accuracy_drop:.2f})"
            )
    else:
        for b in outputs:
            if not np.allclose(outputs[b], reference[b], rtol=tol.rtol, atol=tol.atol):
                excess = np.abs(outputs[b] - reference[b]) - (tol.atol + tol.rtol * np.abs(reference[b]))
                figures["failures"].append(
                    f"{name}: max |diff| {np.abs(outputs[b] - reference[b]).max():.3g} at batch size {b} is outside "
                    f"rtol {tol.rtol:g} / atol {tol.atol:g} (by up to {excess.max():.3g})"
                )
        if min(agree) < 1.0:
            figures["failures"].append(f"{name}: top-1 agreement {100 * min(agree):.2f}% with eager, expected 100%")
    figures["passed"] = not figures["failures"]
    return figures


def format_report(report: dict) -> str:
    """The report as a plain-text table."""
    rows = [("artifact", "runtime", "max |diff|", "top-1 agree", "accuracy", "result")]
    rows.append(("eager", report["eager"]["runtime"], "-", "-", f"{report['eager']['accuracy']:.4f}", "reference"))
    for name, r in report["artifacts"].items():
        result = "ok" if r["passed"] else "REJECTED"
        if "quantization" in r:
            result += f" ({r['quantization']['mode']})"
        if "error" in r:  # the exporter or runtime failed: no figures
            rows.append((name, r.get("runtime", "-"), "-", "-", "-", f"{result} ({r['error'].splitlines()[0][:60]})"))
            continue
        rows.append(
            (
                name,
                r.get("runtime", "?"),
                f"{r['max_abs_diff']:.2e}",
                f"{100 * r['top1_agreement']:.2f}%",
                f"{r['accuracy']:.4f}",
                result,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    v = report["verification"]
    lines.append(
        f"verified on {v['samples']} {v['split']} images at batch size 32 and the first {v['batch_sizes']['1']} "
        "at batch size 1"
    )
    return "\n".join(lines)
