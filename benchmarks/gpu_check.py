"""One GPU check: the figures a GPU user relies on, measured in one process in about 4 minutes on one GPU.

The one command, on the GPU machine, from a copy of the repository with its .wheels/ folder (that machine has
torch, Lightning and torchmetrics but no jsonargparse, which the template imports, and reaches no registry); it
runs this file under a 5-minute timeout and leaves gpu_check.json, gpu_check.txt (the table) and gpu_check.log in
OUT_DIR:

    bash scripts/gpu_check.sh run OUT_DIR

Beforehand, once, where pip reaches PyPI: ``bash scripts/gpu_check.sh fetch`` (jsonargparse[signatures]'s three
pure-Python wheels, about 1 MB, into the ignored .wheels/). Here, on a CPU, the dry run takes every code path but
the CUDA-only ones (those record "skipped: no GPU") at tiny sizes, in about 20 s on 2 cores:

    PYTHONPATH=src python benchmarks/gpu_check.py --dry-run --out /tmp/gpu_check

``--smoke`` is that dry run (its ``--out`` optional: a temporary folder, removed after); the test suite runs it
through ``scripts/gpu_check.sh`` as the GPU machine does (tests/benchmarks/test_gpu_check.py). The ``gpu_check_*``
modules beside this file are its parts, run by it: they have no smoke of their own.

Each section runs under its own time cap (``CAPS_S``), and the JSON is rewritten after every fit, so a timeout
keeps what was measured (a section still "running" there was stopped from outside). "The best" is the fastest
precision variant.

* precision: ResNet-18 at 224 px, batch 256, training images/s on synthetic uint8 batches already on the device,
  through the template's ``ImageClassifier`` and a ``Trainer`` with the flags of ``configs/default.yaml`` +
  ``configs/trainer/gpu.yaml`` (+ ``configs/perf/channels_last.yaml``): ``bf16-mixed`` against fp32 (``32-true``)
  with TF32 off and on, for cuDNN convolutions and cuBLAS matmuls both (``torch.backends.*.fp32_precision`` where
  PyTorch has it, else the legacy ``cudnn.allow_tf32`` / ``cuda.matmul.allow_tf32``; PyTorch's default, TF32 for
  convolutions only, is under ``environment``), each with and without channels_last. Target: bf16 + channels_last
  >= 2x fp32.
* data: the best fed from a generated JPEG folder through ``ImageFolderDataModule``'s cache (its default loader
  workers) against the same fit on synthetic batches on the device, with as many batches per epoch: step time,
  time per image and GPU utilisation (NVML, else nvidia-smi). Target: data-fed / synthetic time per image <= 1.1.
* compile: the best with ``configs/perf/compile.yaml`` against without, compilation apart (the warm-up's extra).
* memory: peak ``torch.cuda.max_memory_allocated`` for fp32 and bf16 (the precision fits) and bf16 with
  ``configs/perf/gradient_checkpointing.yaml``.
* deterministic: the best with ``deterministic: true, benchmark: false`` (what gpu.yaml says bit-exact reruns need).
* nan_guard: the best with ``StopOnNonFiniteLoss`` (one host-device sync per step) against without.
* fsdp: ``configs/default.yaml`` + ``configs/trainer/fsdp.yaml`` on the one GPU: that it fits and writes a
  checkpoint that loads strictly with ``weights_only=True`` (no scaling figure); if the preset fails, once more
  without gradient clipping (Lightning's ``FSDPPrecision`` refuses norm clipping, which default.yaml sets). Last,
  so its process group is not there while the others run.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

from gpu_check_report import Report, environment, table
from gpu_check_sections import GPU_STACK, SECTIONS

# torch, Lightning and litstarter are imported in main(): the image cache's decoder processes start with `spawn`
# and re-import this module, and should not pay for them.

CAPS_S = {"precision": 60, "data": 45, "compile": 75, "memory": 12, "deterministic": 12, "nan_guard": 10, "fsdp": 30}


class SectionTimeout(Exception):
    """A section ran past its cap (an Exception, not a BaseException: Lightning re-raises it after its teardown)."""


@contextlib.contextmanager
def time_cap(seconds: float):
    """Raise :class:`SectionTimeout` in the main thread after ``seconds``."""

    def on_alarm(signum, frame):
        raise SectionTimeout(f"over its {seconds} s cap")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Check:
    """What every section needs: the sizes, whether a GPU is there, a scratch folder and the report.

    Args:
        sizes: The fits' sizes (``gpu_check_fit.GPU_SIZES`` or ``DRY_SIZES``).
        gpu: A CUDA device is there; without one the fits run on the CPU and CUDA-only parts are skipped.
        workdir: Scratch folder (image folder, cache, checkpoints).
        report: The JSON being written.
    """

    def __init__(self, sizes, gpu: bool, workdir: Path, report: Report) -> None:
        self.sizes, self.gpu, self.workdir, self.report = sizes, gpu, workdir, report
        self.best: dict | None = None  # the fastest precision variant: {"name", "spec", "result"}

    def fit(self, entry: dict, name: str, configs: tuple[str, ...] = GPU_STACK, **spec) -> dict | None:
        """Measure one fit into ``entry["results"][name]``; an error is recorded there and the section goes on."""
        import gpu_check_fit as fit

        trainer = dict(spec.pop("trainer_overrides", {}))
        if not self.gpu:
            trainer["accelerator"] = "cpu"
        model = spec.pop("model_overrides", {})
        try:
            result = fit.measure(self.sizes, configs, self.workdir, trainer, model, **spec)
        except SectionTimeout:
            entry["results"][name] = "timed out"
            raise
        except Exception as err:  # noqa: BLE001 - recorded: the check goes on to what it can still measure
            result = f"error: {type(err).__name__}: {err}".splitlines()[0]
            traceback.print_exc()
        entry["results"][name] = result
        self.report.write()
        return result if isinstance(result, dict) else None

    def best_spec(self) -> dict:
        if self.best is None:
            raise RuntimeError("no precision variant was measured, so there is no best one to compare against")
        return {key: dict(value) if isinstance(value, dict) else value for key, value in self.best["spec"].items()}


def run_section(check: Check, name: str) -> None:
    entry = check.report.data["sections"][name] = {"status": "running", "cap_s": CAPS_S[name], "results": {}}
    check.report.write()
    start = time.perf_counter()
    try:
        with time_cap(CAPS_S[name]):
            SECTIONS[name](check, entry)
        entry["status"] = "done"
    except SectionTimeout as err:
        entry["status"] = f"timed out: {err}"
    except Exception as err:  # noqa: BLE001 - recorded; the next section still runs
        entry["status"] = f"error: {type(err).__name__}: {err}".splitlines()[0]
        traceback.print_exc()
    entry["wall_s"] = round(time.perf_counter() - start, 1)
    check.report.write()
    print(f"[gpu_check] {name}: {entry['status']} in {entry['wall_s']} s", flush=True)


def selected(only: str | None) -> list[str]:
    """The sections to run, in order; the precision section too when another needs its best variant."""
    if not only:
        return list(SECTIONS)
    names = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in names if name not in SECTIONS]
    if unknown:
        raise SystemExit(f"gpu_check: error: --only {','.join(unknown)}: expected some of {', '.join(SECTIONS)}")
    if set(names) - {"fsdp", "memory", "precision"}:
        names.append("precision")
    return [name for name in SECTIONS if name in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="folder for gpu_check.json and gpu_check.txt")
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes; CUDA-only parts are skipped")
    parser.add_argument("--smoke", action="store_true", help="the dry run, --out optional (a temporary folder)")
    parser.add_argument("--only", help="comma-separated sections (precision is added when another needs it)")
    args = parser.parse_args(argv)
    if args.out is None and not args.smoke:
        parser.error("the following arguments are required: --out")
    sections = selected(args.only)
    if args.smoke:
        args.dry_run = True
        if args.out is None:
            with tempfile.TemporaryDirectory(prefix="gpu_check-smoke-") as out:
                return run_check(args, sections, Path(out))
    return run_check(args, sections, args.out)


def run_check(args: argparse.Namespace, sections: list[str], out: Path) -> int:
    """The check itself: ``sections`` in order, the JSON and the table written into ``out``."""
    import gpu_check_fit as fit
    import torch

    gpu = torch.cuda.is_available() and not args.dry_run
    if not gpu and not args.dry_run:
        # One line, no usage block: the machine is the problem, not the arguments.
        why = "no CUDA device here: the full check needs one; --dry-run runs it on the CPU at tiny sizes"
        print(f"gpu_check: error: {why}", file=sys.stderr)
        return 2
    if args.dry_run:
        torch.set_num_threads(1)  # tiny fits: a second thread only adds contention on a shared machine
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out / "gpu_check.json", environment(gpu), args.dry_run)
    with tempfile.TemporaryDirectory(prefix="gpu_check-") as tmp:
        check = Check(fit.DRY_SIZES if args.dry_run else fit.GPU_SIZES, gpu, Path(tmp), report)
        report.data["sizes"] = vars(check.sizes) | {"caps_s": CAPS_S}
        for name in sections:
            run_section(check, name)
    text = table(report.data)
    (out / "gpu_check.txt").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_check_fit, data_pipeline: beside this file
    sys.exit(main())
