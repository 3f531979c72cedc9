"""The task seam is real: a fourth task (is the digit mirrored?), of a target kind of its own, is added to a copy of
the repository as new files only, and trains, exports, answers ``infer`` and is served, with no file edited."""

from __future__ import annotations

import csv
import shutil
import subprocess
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from tests.extras.serve.test_serve import start_server
from tests.helpers import REPO, run_litstarter

pytestmark = pytest.mark.slow

TOY = Path(__file__).parent / "fourth_task"
#: Where each of the toy's files goes in the copy.
ADDED = {
    "mirrored.py": "src/litstarter/tasks/mirrored.py",
    "mirrored_answers.py": "src/litstarter/tasks/mirrored_answers.py",
    "mirrored.yaml": "configs/task/mirrored.yaml",
}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def copy_repository(to: Path) -> Path:
    """The repository's files as a clone holds them (tracked, and new ones not ignored), committed in a fresh git
    repository at ``to``."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO).split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    git("init", "-q", cwd=to)
    git("add", "-A", cwd=to)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "copy", cwd=to)
    return to


def test_a_fourth_task_added_as_new_files_trains_exports_infers_and_serves(tmp_path: Path) -> None:
    copy = copy_repository(tmp_path / "repo")
    for name, where in ADDED.items():
        shutil.copy(TOY / name, copy / where)
    status = git("status", "--porcelain", "--untracked-files=all", cwd=copy).splitlines()
    assert sorted(status) == sorted(f"?? {where}" for where in ADDED.values()), status  # added, none modified

    env = {"PYTHONPATH": f"{copy / 'src'}:{REPO}"}  # the copy's package, and the suite's helpers
    runs = tmp_path / "runs"
    run_litstarter(
        ["fit", "--config", "configs/default.yaml", "--config", "configs/task/mirrored.yaml",
         "--trainer.max_epochs=8", f"--trainer.logger.init_args.save_dir={runs}", "--data.init_args.num_workers=0",
         "--baseline=false"],
        cwd=copy, env=env, timeout=300,
    )  # fmt: skip
    (run,) = runs.glob("*/version_0")
    assert (run / "metrics.json").is_file()
    run_litstarter(["export", "--ckpt_path", str(run / "checkpoints" / "last.ckpt"), "--formats", "onnx"], cwd=copy,
                   env=env, timeout=300)  # fmt: skip
    model = run / "export" / "model.onnx"

    from sklearn.datasets import load_digits

    digits = np.round(load_digits().images[:12] * (255.0 / 16.0)).astype(np.uint8)
    files = []
    for i, digit in enumerate(digits):
        files.append(tmp_path / "inputs" / f"{i:02d}.png")
        files[-1].parent.mkdir(exist_ok=True)
        Image.fromarray(digit[:, ::-1] if i % 2 else digit).save(files[-1])
    out = tmp_path / "predictions.csv"
    run_litstarter(["infer", "--model", str(model), "--input", str(files[0].parent), "--output", str(out)],
                   cwd=copy, env=env)  # fmt: skip
    with open(out, newline="") as handle:
        rows = {Path(r["file"]).name: r for r in csv.DictReader(handle)}
    assert list(next(iter(rows.values()))) == ["file", "mirrored", "probability", "error"]
    mirrored = [rows[f.name]["mirrored"] == "yes" for f in files]
    assert sum(m == bool(i % 2) for i, m in enumerate(mirrored)) >= 9, mirrored  # most of them right

    server = start_server(model, env=env)
    try:
        for path in files:
            answer = httpx.post(
                f"{server.url}/predict", content=path.read_bytes(), headers={"Content-Type": "image/png"}
            ).json()
            assert answer["mirrored"] == (rows[path.name]["mirrored"] == "yes")
            assert answer["probability"] == pytest.approx(float(rows[path.name]["probability"]), abs=1e-6)
    finally:
        assert server.stop() == 0, server.output()
