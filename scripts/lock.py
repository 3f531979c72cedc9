"""The hashed locks: what ``make install`` and ``make install-dev`` install, and how ``make update-deps`` renews them.

``requirements/train.txt`` (what training needs) and ``requirements/dev.txt`` (the ``dev`` extra: every extra and the
test tools) are written by pip-compile with ``--generate-hashes``, from pyproject.toml's ranges. They leave out the
project itself: pip refuses ``-e .`` in hash-checking mode, so the Makefile installs a lock with ``--require-hashes``
and then the project with ``--no-deps -e .``. A wheel whose bytes changed under its version (a release pulled and
re-uploaded, a mirror serving something else) stops the install instead of entering the venv.

A lock holds the wheels of one platform: Linux x86_64, CPython 3.11 (CI, this project's development machines, most
training boxes). Anywhere else (macOS, Windows, another Python, a ``+cpu`` torch) the ranges install as before, after
a one-line notice. uv is not used: it ignores pip's configuration (the local wheels and the torch cap) and would
resolve another torch.

    python scripts/lock.py --matches      # exit 0 where the locks apply, else the notice and exit 1
    python scripts/lock.py --renew        # compile new locks, install them, run the suite, then write them
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCKS = {"train": ROOT / "requirements" / "train.txt", "dev": ROOT / "requirements" / "dev.txt"}
#: The platform every lock is compiled on and for: (sys.platform, machine, Python major.minor).
LOCKED_FOR = ("linux", "x86_64", (3, 11))
#: pip's cap on this machine (the torch and torchvision on its disk); compiled under it where it exists.
MACHINE_CONSTRAINTS = Path("/etc/xdg/pip/constraints.txt")


def this_platform() -> tuple[str, str, tuple[int, int]]:
    """``(sys.platform, machine, (major, minor))`` of the running interpreter."""
    return sys.platform, platform.machine(), sys.version_info[:2]


def notice(where: tuple[str, str, tuple[int, int]]) -> str | None:
    """The one line saying why the locks do not apply on ``where``; None where they do."""
    if where == LOCKED_FOR:
        return None
    system, machine, (major, minor) = where
    return (
        f"install: the hashed locks (requirements/*.txt) are for Linux x86_64 CPython 3.11, this is {system} {machine}"
        f" CPython {major}.{minor}: installing pyproject.toml's version ranges instead, without hash checking"
    )


def compile_command(extra: str | None, output: Path, constraints: list[Path] = (), upgrade: bool = False) -> list[str]:
    """The pip-compile command that writes the lock of ``extra`` (None: the core dependencies) to ``output``."""
    cmd = [sys.executable, "-m", "piptools", "compile", "--quiet", "--generate-hashes", "--allow-unsafe"]
    cmd += ["--strip-extras", "--no-emit-index-url", "--no-emit-find-links", "--output-file", str(output)]
    for path in [MACHINE_CONSTRAINTS, *constraints]:
        if path.is_file():
            cmd += ["--constraint", str(path)]
    if extra:
        cmd += ["--extra", extra]
    if upgrade:
        cmd.append("--upgrade")
    return [*cmd, str(ROOT / "pyproject.toml")]


def pins(lock_text: str) -> dict[str, str]:
    """``{distribution: version}`` of a lock's ``name==version`` lines."""
    return dict(re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", lock_text, re.M))


def without_project(lock_text: str, name: str = "litstarter") -> str:
    """``lock_text`` less the project's own entry, which pip-compile writes for the ``dev`` extra's references to
    the project's other extras (``litstarter[deploy]``) as an unhashable ``litstarter @ file://...``, with a warning:
    the Makefile installs the project itself, ``--no-deps -e .``."""
    warning = r"# WARNING: pip install will require the following package to be hashed\.\n(?:#.*\n)*"
    entry = rf"{re.escape(name)} @ \S+\n(?:    #.*\n)*"
    return re.sub(rf"(?:{warning})?{entry}", "", lock_text)


def install_command(lock: Path) -> list[str]:
    """pip installing ``lock`` with every wheel's hash checked."""
    return [sys.executable, "-m", "pip", "install", "--quiet", "--require-hashes", "-r", str(lock)]


def renew() -> int:
    """Compile both locks anew (newest releases within pyproject.toml's ranges) into a scratch folder, install the
    dev lock into this venv and run the suite on it; only when it passes are ``requirements/*.txt`` replaced. When it
    fails the venv goes back to the current dev lock and the locks stay as they are."""
    with tempfile.TemporaryDirectory(prefix="lock-") as scratch:
        new = {name: Path(scratch) / path.name for name, path in LOCKS.items()}
        # dev first, then train within dev's versions: `make train` then `make test` changes no version
        print("update-deps: compiling requirements/dev.txt (pip-compile, several minutes)")
        env = {**os.environ, "CUSTOM_COMPILE_COMMAND": "make update-deps APPLY=1"}  # the lock's header says so
        subprocess.run(compile_command("dev", new["dev"], upgrade=True), check=True, env=env)
        same = Path(scratch) / "dev-pins.txt"
        same.write_text("".join(f"{k}=={v}\n" for k, v in pins(new["dev"].read_text()).items()))
        print("update-deps: compiling requirements/train.txt within dev's versions")
        subprocess.run(compile_command(None, new["train"], constraints=[same], upgrade=True), check=True, env=env)
        for path in new.values():
            path.write_text(without_project(path.read_text()))
        subprocess.run(install_command(new["dev"]), check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(ROOT)], check=True)
        suite = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile"]
        if subprocess.run(suite, cwd=ROOT).returncode != 0:
            print("update-deps: the suite failed on the new locks; requirements/*.txt unchanged, .venv restored")
            subprocess.run(install_command(LOCKS["dev"]), check=True)
            return 1
        for name, path in new.items():
            shutil.copyfile(path, LOCKS[name])
    print("update-deps: the suite passed; requirements/train.txt and requirements/dev.txt written")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--matches", action="store_true", help="exit 0 where the locks apply, else print why not")
    group.add_argument("--renew", action="store_true", help="compile, install and test new locks, then write them")
    args = parser.parse_args(argv)
    if args.matches:
        line = notice(this_platform())
        if line:
            print(line)
        return 0 if line is None else 1
    return renew()


if __name__ == "__main__":
    sys.exit(main())
