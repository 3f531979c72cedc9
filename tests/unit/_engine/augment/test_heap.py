"""keep_freed_memory stops batch-sized tensors from being mapped and page-faulted in afresh every batch."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from litstarter._engine.augment import heap
from litstarter._engine.augment.heap import keep_freed_memory

# Rounds of batch-sized work tensors (6 x 4 MiB alive at once, then all freed), as a loader's batches are;
# prints the page faults per round after a warm-up. Both pin glibc's starting mmap threshold (128 KiB), which
# its dynamic adjustment keeps in some processes and not in others (runs of the same loader here differed by
# 1.4x in throughput); "keep" then applies keep_freed_memory().
ROUNDS = """
import ctypes, importlib.util, resource, sys, torch
spec = importlib.util.spec_from_file_location("heap", sys.argv[2])  # the module alone, without Lightning
heap = importlib.util.module_from_spec(spec)
spec.loader.exec_module(heap)
assert ctypes.CDLL(None).mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD at glibc's start value, pinned
if sys.argv[1] == "keep":
    assert heap.keep_freed_memory()  # must override it
def one_round():
    blocks = [torch.ones(2**20) for _ in range(6)]
    return sum(float(b[0]) for b in blocks)
for _ in range(5):
    one_round()
start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    one_round()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start) / 10)
"""
PAGES_PER_ROUND = 6 * 4 * 2**20 // 4096


def _faults_per_round(mode: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", ROUNDS, mode, heap.__file__], capture_output=True, text=True, check=True, timeout=120
    )
    return float(out.stdout.strip())


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the thresholds are glibc's")
def test_keeping_freed_memory_removes_the_per_batch_page_faults() -> None:
    mapped, kept = _faults_per_round("initial"), _faults_per_round("keep")
    assert mapped > PAGES_PER_ROUND / 2, mapped  # every round maps fresh pages and faults them in
    assert kept < PAGES_PER_ROUND / 100, kept  # the heap keeps the pages from one round to the next


def test_keep_freed_memory_tries_once_per_process(monkeypatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(heap, "_raise_thresholds", lambda limit: calls.append(limit) or True)
    monkeypatch.setattr(heap, "_outcome", None)
    assert keep_freed_memory() and keep_freed_memory()
    assert calls == [heap.HEAP_BLOCK_LIMIT]  # the second call did not try again
    monkeypatch.setattr(heap, "_outcome", (os.getpid() + 1, False))  # what a forked worker inherits
    assert keep_freed_memory() and len(calls) == 2  # it decides for itself
