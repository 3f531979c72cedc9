"""``litstarter lr-find`` as a user runs it: the curve, the suggestion and a config delta that stacks, the
caveat said, and no file in the working directory, even when the sweep is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from PIL import Image

from litstarter.__main__ import main as entry
from tests.helpers import DEFAULT_CONFIG, REPO, run_cli

SWEEP = ["lr-find", "--config", str(DEFAULT_CONFIG), "--data.init_args.num_workers=0", "--num_training=30"]


def start(cwd: Path, tmp: Path, *extra: str) -> subprocess.Popen:
    """``litstarter lr-find`` in ``cwd``, with its temporary files under ``tmp`` (TMPDIR)."""
    cwd.mkdir()
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    command = [sys.executable, "-m", "litstarter", *SWEEP, *extra]
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_sweep_writes_the_curve_and_a_delta_that_stacks_and_nothing_else(tmp_path: Path, capsys, monkeypatch):
    work, tmp, out = tmp_path / "work", tmp_path / "tmp", tmp_path / "found"
    work.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # TMPDIR, for this process
    assert entry([*SWEEP, f"--out={out}"]) == 0
    stdout = capsys.readouterr().out
    assert "every parameter group" in stdout and "backbone_lr_scale" in stdout  # what the sweep cannot see
    assert list(work.iterdir()) == []
    assert not [p.name for p in tmp.iterdir() if "lr_find" in p.name or "lr-find" in p.name]
    assert sorted(p.name for p in out.iterdir()) == ["lr_find.png", "lr_find.yaml"]
    with Image.open(out / "lr_find.png") as image:
        assert image.format == "PNG" and min(image.size) > 200
    (line,) = (out / "lr_find.yaml").read_text().splitlines()
    suggestion = yaml.safe_load(line)["model.optimizer.init_args.lr"]
    assert 1e-6 < suggestion < 1.0 and f"{suggestion:.3g}" in stdout
    with pytest.raises(SystemExit):  # the delta stacks onto the config it was found for
        run_cli(["fit", "--config", str(DEFAULT_CONFIG), "--config", str(out / "lr_find.yaml"), "--print_config"])
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["model"]["init_args"]["optimizer"]["init_args"]["lr"] == suggestion


def test_a_killed_sweep_leaves_nothing_in_the_working_directory(tmp_path: Path) -> None:
    proc = start(tmp_path / "work", tmp_path / "tmp", "--num_training=2000")
    deadline = time.monotonic() + 240
    while not list((tmp_path / "tmp").rglob(".lr_find_*.ckpt")):  # the finder's weights, saved before the sweep
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-3000:]
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert list((tmp_path / "work").iterdir()) == []


def test_bad_sweep_options_are_refused_in_one_line(capsys) -> None:
    for argv, named in (
        (["--min_lr=1", "--max_lr=0.1"], "--min_lr"),
        (["--ckpt_path=last.ckpt"], "--ckpt_path"),
        (["--num_trainig=5"], "--num_trainig"),  # a typo: not taken for a fit option
        (["--num_steps=5"], "--num_training: litstarter lr-find --help"),  # lr-find's own options are named
    ):
        assert entry([*SWEEP, *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("litstarter lr-find: error: ") and named in err and "Traceback" not in err, err
