"""Verification of an exported artifact against the eager model: the figures, the tolerances, the table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from litstarter.extras.deploy.backends import Backend
from litstarter.tasks.answers import TaskAnswers, figure_label, logit_bound


@dataclass(frozen=True)
class Tolerances:
    """What an artifact must meet against the eager model.

    An fp32 artifact must give the task's answers (:attr:`TaskAnswers.agreement_required`) and every logit within
    ``atol + rtol * max|eager logit|`` of the same image (:func:`~litstarter.tasks.answers.logit_bound`). Both
    runtimes compute in float32 (machine epsilon 1.2e-7), but in another order and with other kernels (fused
    convolutions and batch norms, other GEMM blockings), so a faithful graph strays by a few epsilons of the
    largest activations per layer: the digits' ONNX 1.4e-6 on logits up to 4, a 30-epoch segmenter's 1.6e-5 on
    logits of 11 to 21, another's 1.06e-4 at a logit near zero (which an elementwise rtol rejected with every pixel
    agreeing): under 1% of the bound. A wrong graph lands far outside it: on the digits, one layer's weights 1%
    larger 10 to 37 times the bound, one ReLU left out 230 to 1800 times (tests/extras/deploy/test_verify.py).
    ``atol`` covers an image whose logits are all near zero.

    Args:
        rtol: fp32 artifacts: tolerance on every logit, relative to the largest ``|logit|`` of its image in eager.
        atol: fp32 artifacts: absolute tolerance on every logit.
        int8_max_accuracy_drop: INT8: largest allowed drop in the task's score on the test split (accuracy; a
            multi-label model's mAP), as a fraction (0.01 = 1 point); inclusive, judged at the 0.01 point the
            report prints.
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
        quantized: INT8 (a tolerance on the task's score) rather than fp32 (the task's answers and the logits,
            :func:`fp32_failures`).
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
        drop, allowed = round(100 * (eager_score - score), 2), round(100 * tol.int8_max_accuracy_drop, 2)
        if drop > allowed:  # at the precision printed: "1.00 points below (allowed: 1.00)" passes
            figures["failures"].append(
                f"{name}: {scored} {score:.4f} is {drop:.2f} points below eager {eager_score:.4f}"
                f" (allowed: {allowed:.2f})"
            )
    else:
        figures["failures"] += fp32_failures(name, outputs, reference, tol, answers)
    figures["passed"] = not figures["failures"]
    return figures


def fp32_failures(
    name: str, outputs: dict[int, np.ndarray], reference: dict[int, np.ndarray], tol: Tolerances, answers: TaskAnswers
) -> list[str]:
    """What keeps an fp32 artifact out: logits outside :class:`Tolerances` (as the task compares them,
    ``answers.close``) at a batch size, or fewer of the task's answers the same as eager's than it requires."""
    failures = []
    for b in outputs:
        if not answers.close(outputs[b], reference[b], tol.rtol, tol.atol):
            diff = np.abs(outputs[b] - reference[b])
            excess = (diff - logit_bound(reference[b], tol.rtol, tol.atol)).max()
            failures.append(
                f"{name}: max |diff| {diff.max():.3g} at batch size {b} is outside atol {tol.atol:g} + rtol"
                f" {tol.rtol:g} x the image's largest |logit| (by up to {excess:.3g})"
            )
    agreed = min(answers.agreement(outputs[b], reference[b]) for b in outputs)
    if agreed < answers.agreement_required:
        failures.append(
            f"{name}: {figure_label(answers.agreement_name)} {100 * agreed:.2f}% with eager, expected at least"
            f" {100 * answers.agreement_required:g}%"
        )
    return failures


def format_report(report: dict) -> str:
    """The report as a plain-text table."""
    v = report["verification"]
    agreed, scored = v["agreement"], v["score"]  # the task's names
    rows = [("artifact", "runtime", "max |diff|", figure_label(agreed), scored, "result")]
    rows.append(("eager", report["eager"]["runtime"], "-", "-", f"{report['eager'][scored]:.4f}", "reference"))
    left_out = report.get("left_out", {})
    for name, r in report["artifacts"].items():
        result = "ok" if r["passed"] else "REJECTED"
        if "quantization" in r:
            result += f" ({r['quantization']['mode']})"
        if name in left_out:  # a default export goes on without it
            result = f"left out: {left_out[name]}"
        elif "error" in r:  # the exporter or runtime failed: no figures
            result = f"{result} ({r['error'].splitlines()[0][:60]})"
        if "error" in r:
            rows.append((name, r.get("runtime", "-"), "-", "-", "-", result))
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
    widths[-1] = min(widths[-1], len("ok (static_qdq)"))  # a reason may run on past the rule
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(
        f"verified on {v['samples']} {v['split']} images at batch size 32 and the first {v['batch_sizes']['1']} "
        "at batch size 1"
    )
    return "\n".join(lines)
