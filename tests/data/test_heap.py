"""keep_freed_memory stops batch-sized tensors from being mapped and page-faulted in afresh every batch."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from litstarter.data.heap import keep_freed_memory

# Allocate, touch and free a batch's worth of work tensors (a few MB each), then count the page faults of
# ten more rounds.
ROUNDS = """
import resource, sys, torch
from litstarter.data.heap import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def one_batch():
    a = torch.ones(64, 3, 74, 74); b = a * 2; c = torch.nn.functional.avg_pool2d(b, 2)
    return int((c + 1).to(torch.int16).sum())
for _ in range(5):
    one_batch()
start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    one_batch()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start) / 10)
"""


def _faults_per_round(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", ROUNDS, mode], capture_output=True, text=True, check=True, timeout=120)
    return float(out.stdout.strip())


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the thresholds are glibc's")
def test_keeping_freed_memory_removes_the_per_batch_page_faults() -> None:
    default, kept = _faults_per_round("default"), _faults_per_round("keep")
    # by default a round faults in hundreds to thousands of fresh 4 KiB pages; kept, the heap already has them
    assert kept * 5 < default, (kept, default)


def test_keep_freed_memory_tries_once_per_process() -> None:
    first = keep_freed_memory()
    assert keep_freed_memory() == first
    assert first == (platform.libc_ver()[0] == "glibc")
