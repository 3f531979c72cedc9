"""The entry point: the static subcommand tables stay equal to what actually dispatches, and answering help or a
typo imports neither torch nor Lightning."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from litstarter.__main__ import LIGHTNING_COMMANDS, extra_commands, main, top_level_help
from tests.helpers import REPO


def test_static_lightning_list_equals_lightning_clis_subcommands() -> None:
    from litstarter.cli import LitStarterCLI

    assert list(LIGHTNING_COMMANDS) == list(LitStarterCLI.subcommands())


@pytest.mark.parametrize("name", sorted(extra_commands()))
def test_every_extras_subcommand_is_in_the_help_and_resolves_to_a_main(name: str) -> None:
    command = extra_commands()[name]
    assert command.help, f"the {command.extra} extra's COMMANDS[{name!r}] has no one-line help"
    assert any(line.split()[:1] == [name] for line in top_level_help().splitlines())
    module = importlib.import_module(f"litstarter.extras.{command.extra}.{command.module}")
    assert callable(module.main)


def test_extras_and_lightning_names_do_not_collide() -> None:
    assert not set(extra_commands()) & set(LIGHTNING_COMMANDS)


def test_an_extra_without_its_packages_is_left_out_of_the_help_and_says_what_to_install(monkeypatch, capsys) -> None:
    needing = {name: c for name, c in extra_commands().items() if c.needs}
    if not needing:
        pytest.skip("no installed extra needs packages of its own")
    name, command = next(iter(needing.items()))
    monkeypatch.setitem(sys.modules, command.needs[0], None)  # as if not installed: find_spec then finds nothing
    help_text = top_level_help()
    assert not any(line.split()[:1] == [name] for line in help_text.splitlines())
    assert f"pip install -e '.[{command.extra}]'" in help_text.split("not installed: ")[1]
    assert main([name, "--help"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"litstarter {name}: error: {name} needs {command.needs[0]}, which the [{command.extra}] extra installs:"
        f" pip install -e '.[{command.extra}]'"
    )


PROBE = """
import json, sys
from litstarter.__main__ import main
code = main(sys.argv[1:])
heavy = sorted(m for m in ("torch", "lightning", "jsonargparse", "numpy") if m in sys.modules)
print(json.dumps({"code": code, "heavy": heavy}))
"""


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["--help"], 0, "subcommands:"),
        (["-h"], 0, "subcommands:"),
        ([], 2, "subcommands:"),
        (["fti"], 2, "did you mean 'fit'?"),
        (["inferr", "x.png"], 2, "unknown subcommand 'inferr'"),
    ],
)
def test_help_and_typos_answer_without_importing_torch_or_lightning(argv: list[str], code: int, says: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"code": code, "heavy": []}, proc.stderr
    assert says in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    for name in [*LIGHTNING_COMMANDS, *extra_commands()]:
        assert name in proc.stdout + proc.stderr


def test_fit_start_does_not_import_what_only_some_runs_use() -> None:
    """scikit-learn (digits only), ONNX and onnxscript (export only) are imported where they are used."""
    probe = (
        "import sys; from litstarter.cli import main; import litstarter.data, litstarter.callbacks; "
        "print(sorted(m for m in ('sklearn', 'onnx', 'onnxscript', 'onnxruntime') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
