import os

# Before anything imports torch (pytest imports this package before tests/conftest.py): one intra-op thread, as
# in the CLI subprocesses the tests start, so in-process reference runs compute bit-for-bit like them, and
# BLAS/OpenMP don't oversubscribe the 2 cores.
os.environ.setdefault("OMP_NUM_THREADS", "1")
