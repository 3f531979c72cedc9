"""``litstarter serve`` run in this process, as the entry point runs it, for the end-to-end tests.

Two things beyond the command itself:

- after the server has stopped, it prints the heavy modules it imported and exits 3 if there are any, so that
  serving an ONNX model is checked to be torch-free the way ``infer`` is (``sys.modules``, in the server process);
- ``LITSTARTER_TEST_SLOW_WHITE=<seconds>`` is a fault on cue: a batch holding an all-white image takes that much
  longer to predict, so that a test can hold requests in flight or run past a deadline;
- ``LITSTARTER_TEST_HOLD_LOAD=<file>``: loading the model waits until that file exists (at most 120 s), so that a
  test can probe the server while it loads, however slow the machine, and let it go on by creating the file.

Usage: ``python -m tests.extras.serve.serve_process --model model.onnx --port 0 ...`` (serve's options).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from litstarter.__main__ import main


def slow_down_white_images(seconds: float) -> None:
    """Make every model call on a batch holding an all-white image ``seconds`` slower."""
    from litstarter.extras.deploy.backends import Backend

    call = Backend.__call__

    def slow_call(self, images):  # images: (B, C, H, W) uint8
        if (images == 255).reshape(len(images), -1).all(axis=1).any():
            time.sleep(seconds)
        return call(self, images)

    Backend.__call__ = slow_call


def hold_loading(release: Path, seconds: float = 120) -> None:
    """Make loading the model wait until ``release`` exists (at most ``seconds``)."""
    from litstarter.extras.serve import command

    load = command.load_backends

    def held_load(*args, **kwargs):
        deadline = time.monotonic() + seconds
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.02)  # polling the file the test creates: the observable state, not a guess at timing
        return load(*args, **kwargs)

    command.load_backends = held_load


if __name__ == "__main__":
    if os.environ.get("LITSTARTER_TEST_HOLD_LOAD"):
        hold_loading(Path(os.environ["LITSTARTER_TEST_HOLD_LOAD"]))
    if os.environ.get("LITSTARTER_TEST_SLOW_WHITE"):
        slow_down_white_images(float(os.environ["LITSTARTER_TEST_SLOW_WHITE"]))
    rc = main(["serve", *sys.argv[1:]])
    heavy = sorted(m for m in ("torch", "torchvision", "lightning", "pytorch_lightning") if m in sys.modules)
    print(f"heavy modules imported: {heavy}", flush=True)
    sys.exit(3 if heavy else rc)
