"""What ``benchmarks/gpu_check.py`` writes: the JSON (rewritten after every fit), the environment it ran in, and the
short table printed at the end.

A part of ``benchmarks/gpu_check.py``, imported by it, not a benchmark: no smoke of its own; ``gpu_check.py --smoke``
runs it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLUMNS = [("images_per_s", "img/s", 9), ("step_ms", "step ms", 8), ("first_step_s", "first s", 8),
           ("peak_memory_gib", "peak GiB", 9), ("gpu_utilisation_pct", "GPU %", 6)]  # fmt: skip


class Report:
    """The JSON, rewritten whole (temporary file, then rename) after every change, so a kill leaves what was done.

    Args:
        path: Where the JSON goes.
        environment: The versions and the device, from :func:`environment`.
        dry_run: Tiny sizes on the CPU.
    """

    def __init__(self, path: Path, environment: dict, dry_run: bool) -> None:
        self.path = path
        self.data = {"dry_run": dry_run, "environment": environment, "sections": {}}
        self.write()

    def write(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2) + "\n")
        os.replace(tmp, self.path)


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    proc = subprocess.run([git, "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
    return proc.stdout.strip() or None


def environment(gpu: bool) -> dict:
    """Date, versions, the device and PyTorch's TF32 defaults (read before the check changes them)."""
    import torch
    from gpu_check_device import tf32_api, tf32_state

    env = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        **{name: _version(name) for name in ("torch", "lightning", "torchvision", "torchmetrics", "jsonargparse")},
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "tf32_api": tf32_api(),
        "tf32_defaults": {**tf32_state(), "float32_matmul_precision": torch.get_float32_matmul_precision()},
        "gpu": None,
    }
    if gpu:
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = {"name": props.name, "capability": f"{props.major}.{props.minor}",
                      "memory_gib": round(props.total_memory / 2**30, 1), "driver": _driver()}  # fmt: skip
    return env


def _driver() -> str | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    proc = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                          text=True, timeout=10)  # fmt: skip
    return proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else None


def _cell(value, width: int) -> str:
    if isinstance(value, float | int) and not isinstance(value, bool):
        return f"{value:>{width}g}"
    return f"{'-':>{width}}"


def table(data: dict) -> str:
    """The fits, one line each, then every section's status and ratios."""
    env = data["environment"]
    device = env["gpu"]["name"] if env.get("gpu") else "CPU (dry run)" if data["dry_run"] else "CPU"
    lines = [f"gpu_check on {device}, torch {env['torch']}, lightning {env['lightning']}, {env['date_utc']}"]
    lines.append(f"{'section':<14}{'fit':<34}" + "".join(f"{title:>{width}}" for _, title, width in COLUMNS))
    notes = []
    for section, entry in data["sections"].items():
        for name, result in entry.get("results", {}).items():
            if isinstance(result, dict):
                cells = "".join(_cell(result.get(key), width) for key, _, width in COLUMNS)
                lines.append(f"{section:<14}{name:<34}{cells}")
            else:
                notes.append(f"  {section}.{name}: {result}")
        status = entry.get("status")
        notes.append(f"  {section}: {status} ({entry.get('wall_s', '?')} s of {entry.get('cap_s')} s)")
        for key, value in (entry.get("ratios") or {}).items():
            notes.append(f"    {key}: {value}")
        if "checkpoint" in entry:
            notes.append(f"    checkpoint: {entry['checkpoint']}")
    return "\n".join([*lines, "", *notes])
