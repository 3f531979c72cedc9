"""Leftovers of killed runs: removed when their owner process is gone, another host's only after a day."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from litstarter._engine.leftovers import FOREIGN_MAX_AGE_S, owner_tag, parse_owner, remove_stale, this_host


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: the pid names no process now
    return child.pid


def age(path: Path, seconds: float) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


def test_a_dead_owners_leftovers_go_at_once_and_a_live_owners_stay_however_old(tmp_path: Path) -> None:
    host = this_host()
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as alive:
        try:
            paths = {
                "dead file": tmp_path / f".train.u8.{dead_pid()}@{host}.tmp",
                "dead folder": tmp_path / f".export.{dead_pid()}@{host}.k2j3.staging",
                "live, old": tmp_path / f".val.u8.{alive.pid}@{host}.tmp",
                "ours, old": tmp_path / f".test.u8.{owner_tag()}.tmp",
                "other host, fresh": tmp_path / ".train.u8.12@elsewhere.tmp",
                "other host, old": tmp_path / ".val.u8.12@elsewhere.tmp",
                "untagged, fresh": tmp_path / ".manifest.json.abc.tmp",
                "untagged, old": tmp_path / ".export.x81.staging",
            }
            for name, path in paths.items():
                if "folder" in name or "staging" in path.name:
                    (path / "model.onnx").parent.mkdir()
                    (path / "model.onnx").write_bytes(b"x" * 100)
                else:
                    path.write_bytes(b"x" * 100)
                if "old" in name:
                    age(path, FOREIGN_MAX_AGE_S + 60)
            removed = remove_stale(sorted(tmp_path.iterdir()))
        finally:
            alive.kill()
    gone = {"dead file", "dead folder", "other host, old", "untagged, old"}
    assert {p.name for p in removed} == {paths[n].name for n in gone}
    for name, path in paths.items():
        assert path.exists() == (name not in gone), name


def test_the_owner_tag_parses_back_whatever_the_host_name(monkeypatch) -> None:
    monkeypatch.setattr("socket.gethostname", lambda: "node-7.cluster.example.org")
    tag = owner_tag()
    assert tag == f"{os.getpid()}@node-7_cluster_example_org"  # no dots: names split on them
    assert parse_owner(f".train.labels.npy.{tag}.tmp") == (os.getpid(), "node-7_cluster_example_org")
    assert parse_owner(".export.a1b2.staging") is None
