"""One export under way: each format written to the staging folder, loaded back in its own runtime, compared with
the eager network on the verification batches, and kept or rejected (:class:`ExportJob`); the report it adds up to.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import torch

from litstarter._engine.atomic_io import atomic_write
from litstarter.extras.deploy.backends import open_model
from litstarter.extras.deploy.contract import ModelContract
from litstarter.extras.deploy.export_data import ExportData
from litstarter.extras.deploy.export_folder import ARTIFACT_NAMES, FORMATS
from litstarter.extras.deploy.quantize import quantize_int8
from litstarter.extras.deploy.verify import ArtifactRejected, Tolerances, compare, run_batches
from litstarter.extras.deploy.writers import write_exported, write_onnx, write_torchscript, write_weights
from litstarter.models.network import ImageNetwork


@dataclass
class ExportJob:
    """One export under way: the eager network, its contract, the verification images and the eager reference.

    Args:
        net: The eager network in eval mode.
        contract: The model contract every artifact embeds.
        data: Verification and calibration images.
        staging: The folder the artifacts are written to before they move into ``--out``.
        opset: ONNX opset.
        tolerances: What each artifact must meet.
    """

    net: ImageNetwork
    contract: ModelContract
    data: ExportData
    staging: Path
    opset: int = 18
    tolerances: Tolerances = field(default_factory=Tolerances)
    #: Artifacts kept so far: file name -> what its writer reported.
    artifacts: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.batch_sizes = {32: self.data.test_images, 1: self.data.test_images[:64]}
        self.reference = {b: run_batches(self.net, images, b) for b, images in self.batch_sizes.items()}
        self.answers = self.contract.answers()  # the task's: what agreeing means, and its score
        self.eager_score = self.answers.score(self.reference[32], self.data.test_labels)
        self.example = torch.from_numpy(self.data.test_images[:2].copy())  # 2: a batch of 1 would fix the dim

    def write(self, fmt: str, path: Path) -> dict:
        """Write format ``fmt`` to ``path``; returns what the writer reports."""
        if fmt == "onnx":
            return write_onnx(self.net, path, self.contract, self.example, self.opset)
        if fmt == "int8":
            # The model.onnx verified before this; without one (not asked for, or rejected), a fresh fp32 export.
            fp32 = self.staging / ("model.onnx" if "model.onnx" in self.artifacts else ".fp32.onnx")
            if not fp32.exists():
                write_onnx(self.net, fp32, self.contract, self.example, self.opset)
            return quantize_int8(fp32, path, self.data.calibration_images, self.contract)
        writer = {"weights": write_weights, "ts": write_torchscript, "pt2": write_exported}[fmt]
        return writer(self.net, path, self.contract, self.example)

    def refusals(self) -> dict[str, str]:
        """Formats this network or task cannot have, each with why (the network's ``export_refuses``; INT8 where
        the task's answers have no INT8 figure)."""
        refused = dict(getattr(self.net, "export_refuses", {}))
        if not self.answers.int8:
            refused["int8"] = f"task {self.answers.name} has no INT8 export: its answers are not scored on INT8 here"
        return refused

    def verify(self, fmt: str, path: Path) -> dict:
        """Load ``path`` back in its runtime, run the verification batches and compare with the eager model.

        Raises:
            ArtifactRejected: If the figures miss the tolerances.
        """
        name, kind = FORMATS[fmt]
        backend = open_model(path, kind=kind, contract=self.contract, trust_model=True)  # made just now, by us
        outputs = {b: run_batches(backend, images, b) for b, images in self.batch_sizes.items()}
        figures = compare(
            name, outputs, self.reference, self.data.test_labels, fmt == "int8", self.tolerances, self.answers
        )
        figures["runtime"] = backend.runtime
        if not figures["passed"]:
            raise ArtifactRejected(figures)  # atomic_write removes the temporary file
        return figures

    def write_and_verify(self, fmt: str, info: dict, path: Path) -> None:
        """:meth:`write` then :meth:`verify`; fills ``info`` with the writer's report and the figures."""
        info.update(self.write(fmt, path))
        info["figures"] = self.verify(fmt, path)

    def export(self, fmt: str) -> dict:
        """Write, verify and keep (or reject) one format in the staging folder; returns its figures."""
        name = FORMATS[fmt][0]
        started = time.perf_counter()
        info: dict = {}
        try:
            atomic_write(self.staging / name, partial(self.write_and_verify, fmt, info))
            figures = info.pop("figures")
            self.artifacts[name] = info
        except ArtifactRejected as rejected:
            figures = rejected.figures
        except Exception as err:  # the exporter or the runtime failed on this model: reject this artifact only
            error = f"{type(err).__name__}: {err}"
            figures = {"passed": False, "error": error, "failures": [f"{name}: export failed: {error}"]}
        figures["seconds"] = round(time.perf_counter() - started, 2)
        if "quantization" in info:
            figures["quantization"] = info["quantization"]
        return figures

    def report(
        self, results: dict[str, dict], source: dict, out: Path, skipped: dict[str, str], left_out: dict[str, str]
    ) -> dict:
        """The export report: source, eager score, what was verified on, tolerances, every artifact's figures, the
        formats a default export does not try (``skipped``: file name -> why) and those it tried and goes on
        without (``left_out``: file name -> why; their figures stay under ``artifacts``). ``passed``: every other
        artifact passed."""
        tolerances = self.tolerances
        return {
            "source": source,
            "out": str(out),
            "eager": {self.answers.score_name: self.eager_score, "runtime": f"torch {torch.__version__}"},
            "verification": {
                "agreement": self.answers.agreement_name,
                "score": self.answers.score_name,
                "split": self.data.split,
                "samples": int(len(self.data.test_images)),
                "batch_sizes": {str(b): int(len(images)) for b, images in self.batch_sizes.items()},
            },
            "tolerances": {
                "fp32": {
                    "rtol": tolerances.rtol,
                    "atol": tolerances.atol,
                    "logit_bound": "atol + rtol * max |eager logit| of the image",
                    self.answers.agreement_name: self.answers.agreement_required,
                },
                "int8": {f"max_{self.answers.score_name}_drop": tolerances.int8_max_accuracy_drop},
            },
            "artifacts": results,
            "skipped": skipped,
            "left_out": left_out,
            "removed_stale": sorted(n for n in ARTIFACT_NAMES if n not in self.artifacts and (out / n).exists()),
            "passed": all(r["passed"] for name, r in results.items() if name not in left_out),
        }
