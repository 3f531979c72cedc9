"""`litstarter doctor`: three layers, exit status, and the wording when there is no GPU."""

from __future__ import annotations

import io

import torch

from litstarter.extras.doctor import command as doctor


def test_without_an_accelerator_the_report_says_so(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    out = io.StringIO()
    assert doctor.run(out) == 0
    text = out.getvalue()
    assert "no CUDA device is present" in text
    assert "CUDA_VISIBLE_DEVICES is set to empty" in text
    assert doctor.devices() == ["cpu"]


def test_cpu_only_build_beside_a_visible_gpu_fails_layer_2(monkeypatch, tmp_path) -> None:
    fake_smi = tmp_path / "nvidia-smi"
    fake_smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA Fake (UUID: GPU-0)'\n")
    fake_smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    out = io.StringIO()
    assert doctor.run(out) == 1
    text = out.getvalue()
    assert "CPU-only build" in text and "NVIDIA Fake" in text
    assert "FAILED layer 2. accelerator" in text and "Fix:" in text


def test_a_kernel_that_computes_wrong_fails_layer_3(monkeypatch) -> None:
    monkeypatch.setattr(doctor, "devices", lambda: ["cpu", "meta"])  # meta tensors cannot be copied back
    out = io.StringIO()
    assert doctor.run(out) == 1
    assert "FAILED layer 3. computation" in out.getvalue() and "meta" in out.getvalue()
