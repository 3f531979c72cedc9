"""Verification of an exported artifact against the eager model: the figures, the tolerances, the table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from litstarter.extras.deploy.backends import Backend
from litstarter.tasks.answers import TaskAnswers, figure_label


@dataclass(frozen=True)
class Tolerances:
    """What an artifact must meet against the eager model.

    Args:
        rtol: fp32 artifacts: relative tolerance on every logit.
        atol: fp32 artifacts: absolute tolerance on every logit.
        int8_max_accuracy_drop: INT8: largest allowed drop in the task's score on the test split (accuracy; a
            multi-label model's mAP), as a fraction (0.01 = 1 point).
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
    targets: np.ndarray,
    quantized: bool,
    tol: Tolerances,
    answers: TaskAnswers,
) -> dict:
    """The figures for one artifact against eager, with a ``failures`` list naming each figure out of tolerance.

    Args:
        name: The artifact's file name.
        outputs: Batch size -> the artifact's logits on the verification images.
        reference: Batch size -> the eager logits on the same images.
        targets: The data's targets of the largest batch size's images.
        quantized: INT8 (a tolerance on the task's score) rather than fp32 (elementwise tolerance).
        tol: The tolerances.
        answers: The task's answers: what agreeing means (the same top-1 class, the same label set) and its score
            (accuracy, mAP), under their own names (``answers.agreement_name``, ``answers.score_name``).
    """
    full = max(outputs)
    agreed, scored = answers.agreement_name, answers.score_name
    diffs = [float(np.abs(outputs[b] - reference[b]).max()) for b in outputs]
    agree = [answers.agreement(outputs[b], reference[b]) for b in outputs]
    score, eager_score = answers.score(outputs[full], targets), answers.score(reference[full], targets)
    figures = {
        "max_abs_diff": max(diffs),
        agreed: min(agree),
        scored: score,
        f"{scored}_drop": eager_score - score,
        "by_batch_size": {
            str(b): {"max_abs_diff": d, agreed: a} for b, d, a in zip(outputs, diffs, agree, strict=True)
        },
        "failures": [],
    }
    if quantized:
        if eager_score - score > tol.int8_max_accuracy_drop + 1e-12:
            figures["failures"].append(
                f"{name}: {scored} {score:.4f} is {100 * (eager_score - score):.2f} points below eager "
                f"{eager_score:.4f} (allowed: {100 * tol.int8_max_accuracy_drop:.2f})"
            )
    else:
        for b in outputs:
            if not answers.close(outputs[b], reference[b], tol.rtol, tol.atol):
                excess = np.abs(outputs[b] - reference[b]) - (tol.atol + tol.rtol * np.abs(reference[b]))
                figures["failures"].append(
                    f"{name}: max |diff| {np.abs(outputs[b] - reference[b]).max():.3g} at batch size {b} is outside "
                    f"rtol {tol.rtol:g} / atol {tol.atol:g} (by up to {excess.max():.3g})"
                )
        if min(agree) < answers.agreement_required:
            figures["failures"].append(
                f"{name}: {figure_label(agreed)} {100 * min(agree):.2f}% with eager, expected at least"
                f" {100 * answers.agreement_required:g}%"
            )
    figures["passed"] = not figures["failures"]
    return figures


def format_report(report: dict) -> str:
    """The report as a plain-text table."""
    v = report["verification"]
    agreed, scored = v["agreement"], v["score"]  # the task's names
    rows = [("artifact", "runtime", "max |diff|", figure_label(agreed), scored, "result")]
    rows.append(("eager", report["eager"]["runtime"], "-", "-", f"{report['eager'][scored]:.4f}", "reference"))
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
                f"{100 * r[agreed]:.2f}%",
                f"{r[scored]:.4f}",
                result,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(
        f"verified on {v['samples']} {v['split']} images at batch size 32 and the first {v['batch_sizes']['1']} "
        "at batch size 1"
    )
    return "\n".join(lines)
