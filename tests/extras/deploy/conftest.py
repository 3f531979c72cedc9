"""Session fixtures of the deploy extra: one export of the shared digits run, and the digits as PNG files."""

from __future__ import annotations

import io
import warnings
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from litstarter.data import DigitsDataModule
from tests.helpers import best_checkpoint


@dataclass
class ExportRun:
    """One ``litstarter export`` of the digits run: its folder, exit code, printed output and warnings."""

    ckpt: Path
    out: Path
    rc: int
    stdout: str
    stderr: str
    warnings: list[str]


@pytest.fixture(scope="session")
def digits_export(digits_run, tmp_path_factory) -> ExportRun:
    """Every format exported (and verified) once from the digits run's best checkpoint, in-process.

    Treat ``out`` as read-only; copy it if a test must change it.
    """
    from litstarter.extras.deploy.export import main

    ckpt = best_checkpoint(digits_run)
    out = tmp_path_factory.mktemp("digits_export") / "export"
    stdout, stderr = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, redirect_stdout(stdout), redirect_stderr(stderr):
        warnings.simplefilter("always")
        rc = main(["--ckpt_path", str(ckpt), "--out", str(out)])
    return ExportRun(ckpt, out, rc, stdout.getvalue(), stderr.getvalue(), [str(w.message) for w in caught])


NUM_IMAGES = 48


@pytest.fixture(scope="session")
def digit_files(tmp_path_factory) -> tuple[Path, list[Path], np.ndarray]:
    """The first test-split digits as PNG files (names sort in split order), and the arrays they came from."""
    folder = tmp_path_factory.mktemp("digit_pngs")
    images = DigitsDataModule().splits()["test"][0][:NUM_IMAGES]  # (N, 1, 8, 8) uint8, the data module's split
    files = []
    for i, image in enumerate(images):
        files.append(folder / f"{i:03d}.png")
        Image.fromarray(image[0]).save(files[-1])
    return folder, files, images
