"""Both entry points (the console script and python -m) start and list every subcommand, in fresh processes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from litstarter.__main__ import LIGHTNING_COMMANDS, extra_commands
from tests.helpers import REPO


def test_console_script_and_module_entry_point_both_work() -> None:
    exe = Path(sys.executable).parent / "litstarter"
    assert exe.exists() or shutil.which("litstarter"), "console script `litstarter` is not installed"
    for cmd in ([str(exe)], [sys.executable, "-m", "litstarter"]):
        proc = subprocess.run([*cmd, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        for sub in [*LIGHTNING_COMMANDS, *extra_commands()]:  # every installed extra's too
            assert sub in proc.stdout
