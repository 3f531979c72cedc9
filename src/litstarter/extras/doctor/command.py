"""``litstarter doctor``: verify the install in three layers, the way a practitioner would by hand.

1. Versions: can the stack be imported, and which builds are they (torch's CUDA version included)?
2. Accelerator: is a device visible, how many, which; and the classic reasons one is not.
3. A real computation on each device, checked against the CPU, because ``is_available()`` can be true
   while kernels fail (driver/toolkit mismatch, a card without support for this build).

Exits 0 when every layer passes; otherwise non-zero, naming the failed layer and the fix.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

# Standard library only: the report must still print when torch or Lightning cannot be imported.
from litstarter._engine.arguments import ArgumentParser
from litstarter._engine.cores import auto_num_workers, available_cores

PACKAGES = ["torch", "torchvision", "lightning", "torchmetrics"]
#: Packages some extras need, reported when installed and never a failure: name -> the extra that installs it.
OPTIONAL = {
    "onnxruntime": "deploy",
}


@dataclass
class Layer:
    """One layer of the report: lines to print, and a failure (with its fix) if any."""

    title: str
    lines: list[str] = field(default_factory=list)
    failure: str | None = None
    fix: str | None = None


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), else whatever ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def check_versions() -> Layer:
    """Layer 1: Python and package versions, and the CUDA version torch was built with."""
    layer = Layer("1. versions")
    layer.lines.append(f"python        {platform.python_version()} ({sys.executable})")
    missing = []
    for name in PACKAGES:
        try:
            module = importlib.import_module(name)
            layer.lines.append(f"{name:<13} {getattr(module, '__version__', '?')}")
        except Exception as err:  # noqa: BLE001 - any import failure is the finding
            missing.append(name)
            layer.lines.append(f"{name:<13} NOT IMPORTABLE: {type(err).__name__}: {err}")
    for name, extra in OPTIONAL.items():
        if importlib.util.find_spec(name) is None:
            layer.lines.append(f"{name:<13} not installed (optional: pip install -e '.[{extra}]')")
        else:
            layer.lines.append(f"{name:<13} {getattr(importlib.import_module(name), '__version__', '?')}")
    if "torch" not in missing:
        import torch

        layer.lines.append(f"torch CUDA    {torch.version.cuda or 'none (CPU-only build)'}")
    if missing:
        layer.failure = f"cannot import {', '.join(missing)}"
        layer.fix = "reinstall into the project venv: `make install` (or `pip install -e .`)"
    return layer


def check_accelerator() -> Layer:
    """Layer 2: visible accelerators, and why a GPU may be invisible."""
    import torch

    layer = Layer("2. accelerator")
    layer.lines.append(f"cpu           {cpu_name()}, {os.cpu_count()} logical cores")
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        names = ", ".join(torch.cuda.get_device_name(i) for i in range(count))
        layer.lines.append(f"cuda          {count} device(s): {names}")
    else:
        layer.lines.append("cuda          no CUDA device is present; training runs on the CPU")
        if os.environ.get("CUDA_VISIBLE_DEVICES") is not None and os.environ["CUDA_VISIBLE_DEVICES"].strip() == "":
            layer.lines.append("note          CUDA_VISIBLE_DEVICES is set to empty, which hides every GPU")
        smi = shutil.which("nvidia-smi")
        if smi and torch.version.cuda is None:
            try:
                listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                listed = ""
            if listed:
                first_gpu = listed.splitlines()[0]
                layer.lines.append(f"note          nvidia-smi sees a GPU ({first_gpu}) but torch is a CPU-only build")
                layer.failure = "a GPU is installed but this torch build cannot use it"
                layer.fix = "install a CUDA build of torch matching the driver (see pytorch.org/get-started)"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        layer.lines.append("mps           available (Apple GPU)")
    return layer


def devices() -> list[str]:
    """Every device to test: the CPU, each CUDA device, and MPS where present."""
    import torch

    found = ["cpu"]
    if torch.cuda.is_available():
        found += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found


def check_computation(size: int = 1000) -> Layer:
    """Layer 3: a ``size`` x ``size`` matmul on every device, compared with the CPU result."""
    import torch

    layer = Layer("3. computation")
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=generator, dtype=torch.float64)
    b = torch.randn(size, size, generator=generator, dtype=torch.float64)
    reference = a @ b
    failed = []
    for device in devices():
        try:
            # float32 on the device (TF32 may be on for GPUs), compared loosely with a float64 CPU reference.
            result = (a.float().to(device) @ b.float().to(device)).cpu().double()
            error = ((result - reference).abs().max() / reference.abs().max()).item()
            ok = error < 1e-2
            verdict = "ok" if ok else "WRONG"
            layer.lines.append(f"{device:<13} {size}x{size} matmul {verdict} (max rel. error {error:.1e})")
            if not ok:
                failed.append(device)
        except Exception as err:  # noqa: BLE001 - a kernel that fails to run is the finding
            failed.append(device)
            layer.lines.append(f"{device:<13} matmul FAILED: {type(err).__name__}: {err}")
    if importlib.util.find_spec("onnxruntime") is not None:  # optional: ONNX inference
        import onnxruntime

        layer.lines.append(f"onnxruntime   providers: {', '.join(onnxruntime.get_available_providers())}")
    if failed:
        layer.failure = f"matmul failed or disagreed with the CPU on {', '.join(failed)}"
        layer.fix = "the driver and the torch CUDA build likely mismatch: update the driver or install a matching torch"
    return layer


def run(out=sys.stdout) -> int:
    """Print the three-layer report; return 0 if every layer passed, else 1 (layer 1..3 named)."""
    layers = [check_versions()]
    if layers[0].failure is None:
        layers += [check_accelerator(), check_computation()]
    for layer in layers:
        print(f"[{layer.title}]", file=out)
        for line in layer.lines:
            print(f"  {line}", file=out)
    print("[data loading]", file=out)
    print(f"  cpu cores     {os.cpu_count()} (usable by this process: {available_cores()})", file=out)
    print(f"  num_workers   {auto_num_workers()} (what `data.num_workers: null` picks)", file=out)
    failures = [layer for layer in layers if layer.failure]
    for layer in failures:
        print(f"FAILED layer {layer.title}: {layer.failure}. Fix: {layer.fix}", file=out)
    if not failures:
        print("OK: all three layers passed", file=out)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    """``litstarter doctor``: print the report and return the exit code."""
    ArgumentParser(
        prog="litstarter doctor", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)
    return run()
