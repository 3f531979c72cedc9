"""Exported programs in a fresh process: TorchScript and pt2 load there and predict what the checkpoint predicts."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.extras.deploy.helpers import eager_predictions

pytestmark = pytest.mark.slow  # end to end


def test_fresh_process_loads_torchscript_and_pt2(digits_export, digit_files, tmp_path):
    _, _, images = digit_files
    np.save(tmp_path / "images.npy", images)
    script = textwrap.dedent("""
        import io, json, sys, warnings
        import numpy as np, torch
        warnings.simplefilter("ignore", FutureWarning)
        export, images = sys.argv[1], torch.from_numpy(np.load(sys.argv[2]))
        ts = torch.jit.load(export + "/model.ts").eval()
        pt2 = torch.export.load(export + "/model.pt2").module()
        with torch.inference_mode():
            print(json.dumps({"ts": ts(images).argmax(1).tolist(), "pt2": pt2(images).argmax(1).tolist()}))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script, str(digits_export.out), str(tmp_path / "images.npy")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = eager_predictions(digits_export.ckpt, images).tolist()
    assert got == {"ts": expected, "pt2": expected}
