"""Every training command the docs show parses through the CLI: the `litstarter fit|validate|test` lines of their
code blocks, and each recipe row as `litstarter fit --config configs/default.yaml [--config <config>] [<flag>]`.

Placeholders stand for real things: <folder> for an image folder, <run> and <ckpt> for the shared digits run.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.helpers import REPO, best_checkpoint, make_image_folder, run_cli
from tests.test_docs import PAGES, RECIPES

SUBCOMMANDS = ("fit", "validate", "test")


def _block_commands() -> list[str]:
    commands = []
    for page in PAGES:
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.split(r"\s#\s", line, maxsplit=1)[0].strip()
                if line.split()[:2] in [["litstarter", sub] for sub in SUBCOMMANDS] and "[" not in line.split("'")[0]:
                    commands.append(line)
    return commands


def _recipe_commands() -> list[str]:
    commands = []
    for _, config, flag, _ in RECIPES:
        if "litstarter " in config:
            continue  # another subcommand
        configs = [c for c in re.findall(r"`(configs/[\w/.-]+\.yaml)`", config) if c != "configs/default.yaml"]
        words = ["litstarter fit --config configs/default.yaml", *(f"--config {c}" for c in configs)]
        words += re.findall(r"`(--[^`]+)`", flag)[:1]  # the row's delta flag
        if "configs/data/image_folder.yaml" in configs and "--data.root" not in flag:
            words.append("--data.root <folder>")
        commands.append(" ".join(words))
    return commands


COMMANDS = sorted(set(_block_commands() + _recipe_commands()))


@pytest.fixture(scope="module")
def placeholders(digits_run: Path, tmp_path_factory) -> dict[str, str]:
    folder = make_image_folder(tmp_path_factory.mktemp("docs") / "images", {"a": 2, "b": 2}, size=(8, 8))
    ckpt = best_checkpoint(digits_run)
    best = tmp_path_factory.mktemp("study") / "best.yaml"  # what a tune study leaves: tuned keys as a config
    best.write_text("trainer:\n  max_epochs: 2\n")
    found = best.with_name("lr_find.yaml")  # what a learning-rate sweep leaves: a one-line delta
    found.write_text("model.optimizer.init_args.lr: 0.001\n")
    return {
        "runs/digits/tune-default/best.yaml": str(best),
        "runs/lr_find/lr_find.yaml": str(found),
        "<first folder>": str(folder),
        "<new folder>": str(folder),
        "<folder>": str(folder),
        "runs/digits/version_0": str(digits_run),
        "<run>": str(digits_run),
        "<ckpt>": str(ckpt),
        "<node 0>": "127.0.0.1",
    }


@pytest.mark.parametrize("command", COMMANDS)
def test_docs_command_parses(command: str, placeholders: dict[str, str], capsys) -> None:
    for placeholder, value in placeholders.items():
        command = command.replace(placeholder, value)
    words = [str(REPO / w) if w.startswith("configs/") else w for w in shlex.split(command)[1:]]
    if "--help" in words:
        words.remove("--help")
    if "--print_config" not in words:
        words.append("--print_config")
    with pytest.raises(SystemExit) as exit_info:
        run_cli(words)
    assert exit_info.value.code in (0, None), f"`{command}` does not parse:\n{capsys.readouterr().err[-2000:]}"
