"""A seed as a pure function of a few integers (``(seed, epoch, batch, rank)``, ``(seed, epoch, sample)``).

Seeds derived this way need no state: a resumed run, another worker or another rank computes the same one.
"""

from __future__ import annotations

_MASK = 2**64 - 1
_WEIGHTS = (0x9E3779B97F4A7C15, 0xD1B54A32D192ED03, 0x8CB92BA72F3D8DD7, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9)


def mix_seed(*values: int) -> int:
    """A 62-bit seed from up to five non-negative integers: splitmix64's finaliser over their weighted sum. About
    a microsecond (a fresh NumPy generator per seed costs about 14)."""
    x = sum(int(v) * w for v, w in zip(values, _WEIGHTS, strict=False)) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return (x ^ (x >> 31)) >> 2
