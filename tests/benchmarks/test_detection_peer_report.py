"""The Ultralytics benchmark's ``--report`` puts rounds run apart together: one table per round and set, medians over
every round, and the target line judged on the medians (it runs nothing, so it needs no peer)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "detection_peer_ultralytics.py"


def rows(number: int, ours: tuple[float, float, float], peer: tuple[float, float, float]) -> list[dict]:
    sides = {"ours": ours, "ultralytics": peer}
    return [
        {"set": "colour", "round": number, "side": side, "map": m, "map50": m50, "seconds": s}
        for side, (m, m50, s) in sides.items()
    ]


def test_rounds_written_apart_are_reported_together_on_their_medians(tmp_path: Path) -> None:
    first, rest = tmp_path / "first.json", tmp_path / "rest.json"
    first.write_text(json.dumps(rows(1, (0.30, 0.50, 500.0), (0.10, 0.20, 400.0))))
    second, third = rows(2, (0.20, 0.40, 420.0), (0.05, 0.10, 410.0)), rows(3, (0.25, 0.45, 430.0), (0.08, 0.15, 405.0))
    rest.write_text(json.dumps(second + third))
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--report", str(first), str(rest)], capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    assert sum(line.startswith("set ") for line in lines) == 4  # three rounds' tables and the medians'
    assert "medians over 3 round(s)" in lines
    medians = {tuple(line.split()[2:3]): line.split()[3:] for line in lines if line.startswith("colour      -")}
    assert medians == {("ours",): ["0.2500", "0.4500", "430.0"], ("ultralytics",): ["0.0800", "0.1500", "405.0"]}
    assert lines[-1] == (
        "colour: ours median >= peer median on both metrics, at <= 1.1x its time: met"
        " (mAP50-95 0.2500 vs 0.0800, mAP50 0.4500 vs 0.1500, time 1.06x)"
    )
