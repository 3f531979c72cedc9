"""Core counting and the automatic loader-worker count, and that they need neither torch nor Lightning."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from litstarter._engine import cores
from tests.helpers import REPO


@pytest.mark.parametrize(("usable", "workers"), [(1, 0), (2, 1), (3, 1), (8, 4)])
def test_auto_num_workers_is_half_the_usable_cores_and_none_on_one(monkeypatch, usable: int, workers: int) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(usable)), raising=False)
    assert cores.available_cores() == usable
    assert cores.auto_num_workers() == workers


def test_without_cpu_affinity_every_logical_core_counts(monkeypatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # macOS / Windows
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert cores.available_cores() == 6 and cores.auto_num_workers() == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # unknown: assume one core
    assert cores.available_cores() == 1 and cores.auto_num_workers() == 0


def test_data_modules_use_it_when_num_workers_is_null(monkeypatch) -> None:
    from litstarter.data import DigitsDataModule

    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(8)), raising=False)
    assert DigitsDataModule(num_workers=None).num_workers == 4
    assert DigitsDataModule(num_workers=0).num_workers == 0


def test_importing_it_loads_neither_torch_nor_lightning() -> None:
    code = "import sys, litstarter._engine.cores; print(sorted({'torch', 'lightning'} & set(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
