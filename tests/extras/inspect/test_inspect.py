"""`litstarter inspect` through the real CLI: a file planted across train and test, the imbalance, the suggested
sampler, every bad file; --json is valid JSON; mistakes are one line, found by fit's own parser (so inspect imports
Lightning: only `litstarter --help` and ONNX `infer` keep the rule of importing neither torch nor Lightning)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import CONFIGS, DEFAULT_CONFIG, make_image_folder, run_litstarter

pytestmark = pytest.mark.slow

FOLDER_CONFIG = str(CONFIGS / "data" / "image_folder.yaml")
ODD = os.fsdecode(b"new_caf\xe9.png")  # a name that isn't valid UTF-8 (Latin-1 bytes)


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> tuple[Path, list[str]]:
    """train/test, 20:4 cat:dog, one train image copied into test (another name, not UTF-8, another class), one
    bad file."""
    tmp = tmp_path_factory.mktemp("inspect")
    root = make_image_folder(tmp / "photos", {"train": {"cat": 20, "dog": 4}, "test": {"cat": 3, "dog": 3}})
    shutil.copy(root / "train" / "cat" / "007.png", root / "test" / "dog" / ODD)
    (root / "test" / "cat" / "empty.png").write_bytes(b"")
    args = [
        "inspect", "--config", str(DEFAULT_CONFIG), "--config", FOLDER_CONFIG, "--data.root", str(root),
        f"--data.init_args.cache_dir={tmp / 'cache'}", "--data.image_size", "16", "--trainer.max_epochs", "5",
    ]  # fmt: skip
    return root, args


def test_inspect_finds_the_planted_copy_the_imbalance_and_suggests_a_sampler(planted) -> None:
    root, args = planted
    report = json.loads(run_litstarter([*args, "--json"]).stdout)  # builds the cache: it was missing
    assert report["cache_reused"] is False
    assert report["leak_count"] == 1
    assert report["leaks"][0]["files"] == {"train": ["train/cat/007.png"], "test": [f"test/dog/{ODD}"]}
    train = report["images"]["train"]  # val carved from train: 18 cats, 3 dogs
    assert train == {"cat": 18, "dog": 3} and report["imbalance_ratio"] == 6.0
    assert {"option": "data.sampler", "value": "balanced"}.items() <= report["suggestions"][0].items()
    assert [b["path"] for b in report["bad_files"]] == ["test/cat/empty.png"]
    assert report["modes"] == {"RGB": 31} and report["sizes"]["width"] == {"min": 24, "median": 24, "max": 24}

    table = run_litstarter(args)  # the second run reads the cache it built
    assert "reused" in table.stdout and "imbalance (train): 6.0:1 (cat / dog)" in table.stdout
    assert "train/cat/007.png = test/dog/new_caf\\xe9.png" in table.stdout
    assert "data.sampler: balanced" in table.stdout and "Traceback" not in table.stderr


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--data.root", "/no/such/folder"], "data.root '/no/such/folder' does not exist"),
        (["--data.sampler", "uniform", "--data.root", "{root}"], "data.sampler: expected"),
        (
            ["--data.chanels", "1", "--data.root", "{root}"],
            "data.chanels: not an option of ImageFolderDataModule (did you mean channels",
        ),
        (["--data.root", "{root}", "--trainer.max_epochs", "many"], "trainer.max_epochs: expected int or null, got"),
        (["--data.root", "{root}", "--config", "configs/data/nothere.yaml"], "configs/data/nothere.yaml"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(planted, extra: list[str], said: str) -> None:
    root, _ = planted
    extra = [e.replace("{root}", str(root)) for e in extra]
    proc = run_litstarter(["inspect", "--config", str(DEFAULT_CONFIG), "--config", FOLDER_CONFIG, *extra], check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("litstarter inspect: error:") and said in proc.stderr
