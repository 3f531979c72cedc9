"""Every YAML under configs/ opens with the line that gives editors its schema (configs/schema.json), then the
command that runs it, and that command parses through the CLI.

Configs live one folder per concern (model/ backbones, optim/ optimisers and schedules, loss/, perf/, trainer/,
data/, experiment/, ...) and state only what they change from configs/default.yaml.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
import yaml

from tests.helpers import CONFIGS, DEFAULT_CONFIG, REPO, run_cli

# configs/search/ holds search spaces for a sweep, not fit configs (the tune extra's tests load them).
ALL_CONFIGS = sorted(p for p in CONFIGS.rglob("*.yaml") if p.parent.name != "search")
# Placeholders a header command may hold, and what stands in for them when the command is parsed.
PLACEHOLDERS = {"<folder>": "{tmp}", "<new folder>": "{tmp}", "$NNODES": "2", "$NPROC_PER_NODE": "1"}
# Files that restate a default on purpose, and why.
RESTATES_ON_PURPOSE = {
    "optim/adamw.yaml": "the default optimiser as a file, a choice between whole optimiser configs in a search",
    "logger/tensorboard.yaml": "the default logger as a file, beside the other logger choices it can be swapped for",
    "experiment/multilabel.yaml": "label_smoothing 0 undoes data/image_folder.yaml's 0.1, which it composes on",
}


#: What opens a config for editors (VS Code's YAML extension reads it; docs/make_it_yours.md): the schema's path
#: relative to the file follows.
SCHEMA_LINE = "# yaml-language-server: $schema="


def _config_id(path: Path) -> str:
    return str(path.relative_to(CONFIGS))


def command_line(config: Path) -> str:
    """The line of ``config`` after its schema line: a comment holding the ``litstarter`` command that runs it."""
    lines = config.read_text().splitlines()
    return lines[1] if lines and lines[0].startswith(SCHEMA_LINE) else lines[0]


def header_command(config: Path) -> list[str]:
    """The ``litstarter`` command that runs ``config`` (its line after the schema line), split into words."""
    first = command_line(config)
    assert first.startswith("# litstarter "), (
        f"{_config_id(config)}: after the schema line comes `# litstarter <command>`"
    )
    line = first[2:]
    for placeholder in PLACEHOLDERS:
        line = line.replace(placeholder, placeholder.replace(" ", "_"))  # one word each
    return shlex.split(line)


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=_config_id)
def test_line_one_gives_editors_the_schema(config: Path) -> None:
    schema = os.path.relpath(CONFIGS / "schema.json", config.parent)
    expected = f"{SCHEMA_LINE}{schema}"
    assert config.read_text().splitlines()[0] == expected, f"{_config_id(config)}: line 1 must be `{expected}`"


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=_config_id)
def test_header_line_is_the_command_that_runs_the_file(config: Path, tmp_path: Path, capsys) -> None:
    words = header_command(config)
    configs = [word for word in words if word.startswith("configs/")]
    assert str(config.relative_to(REPO)) in configs, f"{_config_id(config)}: its command does not name it"
    for path in configs:
        assert (REPO / path).exists(), f"{_config_id(config)}: its command names {path}, which does not exist"
    if words[1] != "fit":
        return  # another subcommand's file (a search space): its own tests parse it
    args = []
    for word in words[2:]:
        for placeholder, value in PLACEHOLDERS.items():
            word = word.replace(placeholder.replace(" ", "_"), value.format(tmp=tmp_path))
        args.append(str(REPO / word) if word.startswith("configs/") else word)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(["fit", *args, "--print_config"])
    assert exit_info.value.code in (0, None)
    printed = capsys.readouterr().out
    assert "trainer:" in printed and "model:" in printed and "data:" in printed


@pytest.mark.parametrize("config", [c for c in ALL_CONFIGS if c != DEFAULT_CONFIG], ids=_config_id)
def test_a_config_states_only_what_it_changes_from_the_default(config: Path) -> None:
    """No key is set to the value configs/default.yaml already gives it (lists of callbacks aside)."""
    if _config_id(config) in RESTATES_ON_PURPOSE:
        pytest.skip(RESTATES_ON_PURPOSE[_config_id(config)])
    default, delta = yaml.safe_load(DEFAULT_CONFIG.read_text()), yaml.safe_load(config.read_text()) or {}

    def restated(base: object, over: object, key: str) -> list[str]:
        if isinstance(base, dict) and isinstance(over, dict):
            if "class_path" in over and over.get("class_path") != base.get("class_path"):
                return []  # another class: its arguments are its own
            return [k for name, v in over.items() if name in base for k in restated(base[name], v, f"{key}.{name}")]
        return [key] if base == over else []

    same = restated(default, delta, "")
    assert not same, f"{_config_id(config)} restates configs/default.yaml's {[k.lstrip('.') for k in same]}"


def test_default_config_runs_alone_and_names_the_essentials() -> None:
    text = DEFAULT_CONFIG.read_text()
    for needed in [
        "seed_everything",
        "max_epochs",
        "deterministic",
        "log_every_n_steps",
        "ModelCheckpoint",
        "LearningRateMonitor",
        "EarlyStopping",
        "TensorBoardLogger",
        "filename: last",
    ]:
        assert needed in text, f"configs/default.yaml lacks {needed}"
