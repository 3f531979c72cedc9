"""How long ``litstarter`` takes to answer, against ``import lightning.pytorch``, measured side by side in one run.

    .venv/bin/python benchmarks/startup.py [--runs 5] [--smoke]

Each command runs ``--runs`` times as a fresh process; the rounds interleave the commands, so a change in
machine load hits all of them alike, and the median wall time of each is printed with its target:

* ``litstarter --help`` and ``litstarter <typo>``: < 1 s (static tables; neither torch nor Lightning imported);
* ``litstarter infer --help``: < 0.5 s (ONNX inference imports neither);
* ``litstarter fit --help`` and a config error found at parse time: <= ``import lightning.pytorch`` + 2 s.

A command that exits other than it should (0; 2 for the typo and the config error) stops the run in one line: a
crash answers fast, and would read as a target met. ``--smoke`` (one run of each, no warm-up) checks that every
command answers as it should and prints the same table; the test suite runs it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LITSTARTER = [sys.executable, "-m", "litstarter"]
DEFAULT = str(REPO / "configs" / "default.yaml")

COMMANDS: dict[str, list[str]] = {
    "import lightning.pytorch": [sys.executable, "-c", "import lightning.pytorch"],
    "litstarter --help": [*LITSTARTER, "--help"],
    "litstarter fti (typo)": [*LITSTARTER, "fti"],
    "litstarter infer --help": [*LITSTARTER, "infer", "--help"],
    "litstarter fit --help": [*LITSTARTER, "fit", "--help"],
    "fit, config error at parse time": [*LITSTARTER, "fit", "--config", DEFAULT, "--trainer.max_epochs=many"],
}
#: The exit status each command answers with (others: 0).
EXIT_CODES = {"litstarter fti (typo)": 2, "fit, config error at parse time": 2}


def wall_time(name: str) -> float:
    """Seconds from start to exit of ``COMMANDS[name]`` (its output discarded); stops the run in one line if it exits
    other than :data:`EXIT_CODES` says."""
    start = time.perf_counter()
    done = subprocess.run(COMMANDS[name], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    expected = EXIT_CODES.get(name, 0)
    if done.returncode != expected:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"startup.py: {name!r} exited {done.returncode}, expected {expected}: {last}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (the median is reported)")
    parser.add_argument("--smoke", action="store_true", help="a quick end-to-end check: one run of each, no warm-up")
    opts = parser.parse_args()
    if opts.smoke:
        opts.runs = 1
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for name in COMMANDS if not opts.smoke else ():  # warm-up: the page cache, .pyc files
        wall_time(name)
    for _ in range(opts.runs):
        for name in COMMANDS:
            times[name].append(wall_time(name))
    med = {name: statistics.median(t) for name, t in times.items()}
    lightning = med["import lightning.pytorch"]
    targets = {
        "litstarter --help": 1.0,
        "litstarter fti (typo)": 1.0,
        "litstarter infer --help": 0.5,
        "litstarter fit --help": lightning + 2.0,
        "fit, config error at parse time": lightning + 2.0,
    }
    print(f"median of {opts.runs} runs each (seconds); every run: see the lists")
    for name, seconds in med.items():
        target = targets.get(name)
        verdict = "" if target is None else f"  target < {target:.2f}: {'met' if seconds <= target else 'NOT met'}"
        print(f"  {name:34s} {seconds:7.3f}{verdict}   {[round(t, 3) for t in times[name]]}")


if __name__ == "__main__":
    main()
