"""What ``benchmarks/gpu_check.py`` sets and reads on the device besides the fits: TF32 for fp32 work, and the GPU's
utilisation while a fit runs.

A part of ``benchmarks/gpu_check.py``, imported by it, not a benchmark: no smoke of its own; ``gpu_check.py --smoke``
runs it.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import subprocess
import threading
from collections.abc import Callable, Iterator

import torch

#: PyTorch >= 2.9 sets TF32 per backend with ``fp32_precision`` ("tf32" / "ieee"); mixing that with the legacy
#: ``allow_tf32`` flags makes later reads raise, so the newer API is used wherever it exists.
TF32_FLAGS = ("cudnn.conv", "cudnn.rnn", "cuda.matmul")


def _backend(path: str):
    module = torch.backends
    for name in path.split("."):
        module = getattr(module, name)
    return module


def tf32_api() -> str:
    """``fp32_precision`` where this PyTorch has it, else ``allow_tf32``."""
    return "fp32_precision" if all(hasattr(_backend(p), "fp32_precision") for p in TF32_FLAGS) else "allow_tf32"


def tf32_state() -> dict:
    """The TF32 settings as they are now, under the API :func:`tf32_api` uses."""
    if tf32_api() == "fp32_precision":
        return {f"torch.backends.{p}.fp32_precision": _backend(p).fp32_precision for p in TF32_FLAGS}
    return {"torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32}  # fmt: skip


def _set_tf32(enabled: bool) -> None:
    if tf32_api() == "fp32_precision":
        for path in TF32_FLAGS:
            _backend(path).fp32_precision = "tf32" if enabled else "ieee"
    else:
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = enabled


@contextlib.contextmanager
def tf32(enabled: bool | None) -> Iterator[None]:
    """TF32 for fp32 convolutions (cuDNN) and matmuls (cuBLAS) on or off for the block (``None``: as they are), then
    restored."""
    saved = tf32_state()
    if enabled is not None:
        _set_tf32(enabled)
    try:
        yield
    finally:
        if tf32_api() == "fp32_precision":
            for path in TF32_FLAGS:
                _backend(path).fp32_precision = saved[f"torch.backends.{path}.fp32_precision"]
        else:
            torch.backends.cudnn.allow_tf32 = saved["torch.backends.cudnn.allow_tf32"]
            torch.backends.cuda.matmul.allow_tf32 = saved["torch.backends.cuda.matmul.allow_tf32"]


def utilisation_reader() -> tuple[Callable[[], float], str] | None:
    """``(read GPU utilisation in %, source)`` from NVML (nvidia-ml-py), else nvidia-smi; ``None`` without a GPU."""
    if not torch.cuda.is_available():
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        return (lambda: float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)), "nvml"
    except Exception:  # no nvidia-ml-py, or NVML refuses: try the command line
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    argv = [smi, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", f"--id={torch.cuda.current_device()}"]
    return (lambda: float(subprocess.run(argv, capture_output=True, text=True, timeout=5).stdout.split()[0])), "smi"


class UtilisationSampler:
    """Samples GPU utilisation every ``interval`` seconds on a thread between ``start()`` and ``stop()``."""

    def __init__(self, reader: Callable[[], float], interval: float = 0.05) -> None:
        self.reader, self.interval, self.samples = reader, interval, []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(Exception):  # a missed sample is no fault of the fit
                self.samples.append(self.reader())

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> float | None:
        """Stop sampling; the mean utilisation in %, ``None`` if no sample came."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return statistics.mean(self.samples) if self.samples else None
