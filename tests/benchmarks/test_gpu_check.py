"""The GPU check cannot rot on a machine without a GPU: its smoke (``--smoke``, the dry run: tiny sizes on the CPU)
goes through every section by the same command the GPU machine runs, and a section over its time cap is recorded and
does not stop the rest. This is gpu_check.py's smoke for tests/benchmarks/test_smoke.py, which runs every other
benchmark's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, launcher_env

SCRIPT = REPO / "scripts" / "gpu_check.sh"
SECTIONS = ["precision", "data", "compile", "memory", "deterministic", "nan_guard", "fsdp"]


def _benchmarks_on_path() -> None:
    if str(REPO / "benchmarks") not in sys.path:
        sys.path.insert(0, str(REPO / "benchmarks"))


def _fits(entry: dict) -> dict[str, dict]:
    return {name: result for name, result in entry["results"].items() if isinstance(result, dict)}


@pytest.mark.slow
def test_dry_run_goes_through_every_section_and_writes_the_json_and_the_table(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        ["bash", str(SCRIPT), "run", str(out), "--smoke"],
        env=launcher_env(PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((out / "gpu_check.json").read_text())
    assert report["dry_run"] is True and report["environment"]["gpu"] is None
    sections = report["sections"]
    assert list(sections) == SECTIONS
    for name, entry in sections.items():
        assert entry["status"] == "done", (name, entry)
        for fit, result in entry["results"].items():
            assert not str(result).startswith(("error", "timed out")), (name, fit, result)
    for name in ("precision", "data", "compile", "deterministic", "nan_guard", "fsdp"):
        fits = _fits(sections[name])
        assert fits, name
        for result in fits.values():
            assert result["images_per_s"] > 0 and result["step_ms"] > 0
            assert result["peak_memory_gib"] == "skipped: no GPU"  # CUDA-only figures say so
            assert result["gpu_utilisation_pct"] == "skipped: no GPU"
    precision = sections["precision"]
    assert precision["results"]["fp32_tf32_on"].startswith("skipped: no GPU")
    assert precision["best"] in _fits(precision)
    assert precision["ratios"]["bf16_channels_last / fp32_tf32_off"] > 0
    assert sections["data"]["ratios"]["image_folder / synthetic step time"] > 0
    assert sections["data"]["train_images"] > 0
    assert sections["memory"]["results"]["bf16_gradient_checkpointing"] == "skipped: no GPU"
    assert sections["fsdp"]["checkpoint"]["loads_strictly"] is True
    table = (out / "gpu_check.txt").read_text()
    assert table in proc.stdout and (out / "gpu_check.log").read_text().strip()
    for name in SECTIONS:
        assert f"{name}: done" in table


def test_a_section_over_its_cap_is_recorded_and_the_next_one_still_runs(tmp_path: Path, monkeypatch) -> None:
    _benchmarks_on_path()
    import gpu_check
    from gpu_check_report import Report

    def stuck(check, entry):
        entry["results"]["first"] = {"images_per_s": 1.0}
        check.report.write()
        time.sleep(5)

    def quick(check, entry):
        entry["results"]["only"] = "measured"

    monkeypatch.setattr(gpu_check, "SECTIONS", {"stuck": stuck, "quick": quick})
    monkeypatch.setattr(gpu_check, "CAPS_S", {"stuck": 0.2, "quick": 5})
    report = Report(tmp_path / "gpu_check.json", {}, dry_run=True)
    check = gpu_check.Check(None, False, tmp_path, report)
    start = time.perf_counter()
    for name in ("stuck", "quick"):
        gpu_check.run_section(check, name)
    assert time.perf_counter() - start < 3
    written = json.loads((tmp_path / "gpu_check.json").read_text())["sections"]
    assert written["stuck"]["status"].startswith("timed out")
    assert written["stuck"]["results"] == {"first": {"images_per_s": 1.0}}  # what it had measured is kept
    assert written["quick"]["status"] == "done" and written["quick"]["results"] == {"only": "measured"}


def test_selected_sections_keep_their_order_and_bring_the_precision_they_compare_against() -> None:
    _benchmarks_on_path()
    import gpu_check

    assert gpu_check.selected("nan_guard,data") == ["precision", "data", "nan_guard"]
    assert gpu_check.selected("fsdp") == ["fsdp"]
    assert gpu_check.selected(None) == SECTIONS
    with pytest.raises(SystemExit, match="--only nope"):
        gpu_check.selected("nope")


@pytest.mark.slow
def test_the_device_script_refuses_a_machine_without_cuda_in_one_line(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the refusal is for one without")
    proc = subprocess.run(
        ["bash", str(SCRIPT), "run", str(tmp_path / "out"), "--only", "precision"],
        env=launcher_env(PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1 and "no CUDA device" in lines[0] and "--dry-run" in lines[0], lines
    assert not (tmp_path / "out" / "gpu_check.json").exists()
