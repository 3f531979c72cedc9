"""How many CPU cores this process may use, and the loader workers that follows from it.

Standard library only: they can be reported even when torch or Lightning cannot be imported.
"""

from __future__ import annotations

import os


def available_cores() -> int:
    """Cores this process may run on: its CPU affinity where the OS has one (Linux), else every logical core."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS / Windows
        return os.cpu_count() or 1


def auto_num_workers() -> int:
    """About half the cores this process may use (hyper-threads share a physical core); 0 on one core.

    Workers are processes that decode/augment while the model trains; more than the physical cores only
    adds contention with the main process.
    """
    cores = available_cores()
    return 0 if cores <= 1 else max(1, cores // 2)
