"""`litstarter inspect` reads fit's --config stack and --data.* options without Lightning; refuses what fit refuses."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from litstarter._engine.errors import UsageError
from litstarter._engine.images.folder import CachedImageFolder
from litstarter.extras.inspect.config_stack import LOADER_ARGUMENTS, build_folder, read_command_line
from tests.helpers import CONFIGS, DEFAULT_CONFIG, make_image_folder

FOLDER_CONFIG = str(CONFIGS / "data" / "image_folder.yaml")


def test_the_config_stack_then_the_data_options_apply_in_order_like_fit(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "photos", {"cat": 3, "dog": 3})
    argv = [
        "--config", str(DEFAULT_CONFIG), "--config", FOLDER_CONFIG, "--data.root", str(root),
        "--data.image_size", "[12, 16]", f"--data.init_args.cache_dir={tmp_path / 'cache'}", "--data.channels=1",
        "--trainer.max_epochs", "3", "--model.class_weights", "auto", "--json",
    ]  # fmt: skip
    config = read_command_line(argv, frozenset({"json"}))
    assert config.flags == ["json"] and config.class_weights == "auto"
    assert config.init_args["batch_size"] == 64 and config.init_args["seed"] == 42  # from default.yaml, kept
    assert "val_fraction" not in config.init_args  # neither YAML states it: the class default applies
    folder = build_folder(config.init_args)
    assert folder.image_size == (12, 16) and folder.channels == 1 and folder.cache_dir == tmp_path / "cache"
    assert folder.class_names == ["cat", "dog"]


def test_the_data_options_it_ignores_are_exactly_the_loaders() -> None:
    from litstarter.data import ImageFolderDataModule

    module = set(inspect.signature(ImageFolderDataModule).parameters)
    assert set(inspect.signature(CachedImageFolder).parameters) | LOADER_ARGUMENTS == module


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--config", str(DEFAULT_CONFIG), "--data.root", "x"],
            "data.class_path is 'litstarter.data.DigitsDataModule'",
        ),
        (["--config", "nowhere.yaml"], "--config 'nowhere.yaml' does not exist"),
        (["--data.root", "{root}", "--data.chanels", "1"], "data.chanels is not an option of ImageFolderDataModule"),
        (
            ["--data.root", "{root}", "--data.image_size", "abc"],
            "data.image_size must be int | tuple[int, int], got 'abc'",
        ),
        (["--data.root", "{root}", "--data.cache_verify", "most"], "data.cache_verify must be Literal"),
        (["--data.root", "{root}", "--epochs", "3"], "unknown option --epochs"),
        (["--data.image_size", "32"], "data.root is not set"),
        (["--data.root", "{root}/missing"], "missing' does not exist"),
    ],
)
def test_mistakes_are_one_sentence_naming_the_option(tmp_path: Path, argv: list[str], message: str) -> None:
    root = make_image_folder(tmp_path / "photos", {"cat": 2, "dog": 2})
    argv = [a.replace("{root}", str(root)) for a in argv]
    with pytest.raises(UsageError, match=None) as info:
        build_folder(read_command_line(argv, frozenset({"json"})).init_args)
    assert message in str(info.value)
