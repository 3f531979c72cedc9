"""`litstarter doctor` in a fresh process: it passes here, and a broken Lightning fails layer 1 with a report."""

from __future__ import annotations

import subprocess
import sys

import pytest

from litstarter.extras.doctor import command as doctor
from tests.helpers import REPO

pytestmark = pytest.mark.slow  # end to end


def test_doctor_passes_here_and_names_the_cpu() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "litstarter", "doctor"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for layer in ["[1. versions]", "[2. accelerator]", "[3. computation]"]:
        assert layer in out
    assert doctor.cpu_name() in out
    assert "torch CUDA" in out and "num_workers" in out and "providers:" in out
    assert "1000x1000 matmul ok" in out


def test_a_broken_lightning_fails_layer_1_with_a_report_not_a_traceback() -> None:
    # None in sys.modules makes `import lightning` raise ImportError, as a broken or missing install would.
    code = (
        "import sys; sys.modules['lightning'] = None; from litstarter.__main__ import main; sys.exit(main(['doctor']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "lightning     NOT IMPORTABLE" in proc.stdout
    assert "FAILED layer 1. versions: cannot import lightning" in proc.stdout
    assert "num_workers" in proc.stdout  # the data-loading section needs no Lightning either
