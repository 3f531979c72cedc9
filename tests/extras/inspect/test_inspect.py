"""`litstarter inspect` through the real CLI: a file planted across train and test, the imbalance (ties and a single
class said plainly), the suggested sampler, every bad file; --json is valid JSON; mistakes are one line, found by
fit's own parser (so inspect imports
Lightning: only `litstarter --help` and ONNX `infer` keep the rule of importing neither torch nor Lightning)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import CONFIGS, DEFAULT_CONFIG, assert_refused, make_image_folder, run_cases

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


def test_inspect_finds_the_planted_copy_the_imbalance_and_suggests_a_sampler(planted, tmp_path: Path) -> None:
    root, args = planted
    cache = next(a for a in args if a.startswith("--data.init_args.cache_dir="))
    bare = ["inspect", "--data.root", str(root), cache, "--data.image_size", "16", "--json"]  # no --config
    cases = [{"argv": [*args, "--json"]}, {"argv": args}, {"argv": bare}]
    as_json, table, without_config = run_cases(tmp_path, cases)  # one process
    assert without_config["code"] == 0, without_config["stderr"][-3000:]  # the image folder, as fit would read it
    assert json.loads(without_config["stdout"])["images"]["train"] == {"cat": 18, "dog": 3}
    assert as_json["code"] == 0, as_json["stderr"][-3000:]
    report = json.loads(as_json["stdout"])  # builds the cache: it was missing
    assert report["cache_reused"] is False
    assert report["leak_count"] == 1
    assert report["leaks"][0]["files"] == {"train": ["train/cat/007.png"], "test": [f"test/dog/{ODD}"]}
    train = report["images"]["train"]  # val carved from train: 18 cats, 3 dogs
    assert train == {"cat": 18, "dog": 3} and report["imbalance_ratio"] == 6.0
    assert {"option": "data.sampler", "value": "balanced"}.items() <= report["suggestions"][0].items()
    size = [s for s in report["suggestions"] if s["option"] == "data.image_size"]  # 20x24 px images, 16 configured
    assert size[0]["value"] == "auto"
    assert size[0]["why"].startswith("32 px here: the median short side of 31 images is 20 px")
    assert [b["path"] for b in report["bad_files"]] == ["test/cat/empty.png"]
    assert report["modes"] == {"RGB": 31} and report["sizes"]["width"] == {"min": 24, "median": 24, "max": 24}
    baseline = report["baseline"]  # fit's linear baseline, scored on the validation split
    assert 0.0 <= baseline["val_acc"] <= 1.0 and 0 < baseline["train_images"] <= report["split_sizes"]["train"]

    table, err = table["stdout"], table["stderr"]  # the second run reads the cache it built
    assert "reused" in table and "imbalance (train): 6.0:1 (cat / dog)" in table
    assert "baseline: logistic regression on raw pixels scores" in table
    assert "train/cat/007.png = test/dog/new_caf\\xe9.png" in table
    assert "data.sampler: balanced" in table and "Traceback" not in err


MISTAKES = [
    (["--data.root", "/no/such/folder"], "data.root '/no/such/folder' does not exist"),
    (["--data.sampler", "uniform", "--data.root", "{root}"], "data.sampler: expected"),
    (
        ["--data.chanels", "1", "--data.root", "{root}"],
        "data.chanels: not an option of ImageFolderDataModule (did you mean channels",
    ),
    (["--data.root", "{root}", "--trainer.max_epochs", "many"], "trainer.max_epochs: expected int or null, got"),
    (["--data.root", "{root}", "--config", "configs/data/nothere.yaml"], "configs/data/nothere.yaml"),
]

#: Folders whose class counts are odd: one class (fit refuses it), a balanced pair, two classes tied for largest.
#: After the default 0.1/0.1 carve: train 5 / 3, 3 / 8, 8, 2.
ODD_COUNTS = {"one_class": {"only": 7}, "balanced": {"a": 5, "b": 5}, "tie": {"a": 10, "b": 10, "c": 4}}


def test_mistakes_are_one_line_and_odd_class_counts_are_said_plainly(planted, tmp_path: Path) -> None:
    """One process: the mistakes (exit 2, one line, fit's parser), then a one-class folder (reported, exit 0, with a
    warning that fit refuses it), a balanced one and a tie for the largest class (named together, not 'a / a')."""
    root, _ = planted
    base = ["inspect", "--config", str(DEFAULT_CONFIG), "--config", FOLDER_CONFIG]
    cases = [{"argv": [*base, *(e.replace("{root}", str(root)) for e in extra)]} for extra, _ in MISTAKES]
    for name, counts in ODD_COUNTS.items():
        folder = make_image_folder(tmp_path / name, counts)
        argv = [*base, "--data.root", str(folder), f"--data.init_args.cache_dir={tmp_path / 'cache'}",
                "--data.image_size", "16"]  # fmt: skip
        cases += [{"argv": argv}, {"argv": [*argv, "--json"]}]
    results = run_cases(tmp_path, cases)

    for result, (_, said) in zip(results, MISTAKES, strict=False):
        assert_refused(result, 2, said)
    odd = {name: results[len(MISTAKES) + 2 * i : len(MISTAKES) + 2 * i + 2] for i, name in enumerate(ODD_COUNTS)}
    for table, as_json in odd.values():
        assert table["code"] == as_json["code"] == 0, table["stderr"][-3000:]
        assert "Traceback" not in table["stderr"] + as_json["stderr"]
    warned = [line for line in odd["one_class"][0]["stderr"].splitlines() if line.startswith("litstarter inspect:")]
    assert len(warned) == 1 and "warning:" in warned[0] and "has 1 class ['only']: fit refuses it" in warned[0]
    assert "imbalance (train): one class only (only)" in odd["one_class"][0]["stdout"]
    assert json.loads(odd["one_class"][1]["stdout"])["warnings"] == [warned[0].split("warning: ", 1)[1]]
    assert "imbalance (train): none, balanced (every class has 3)" in odd["balanced"][0]["stdout"]
    assert "warning" not in odd["balanced"][0]["stderr"] and json.loads(odd["balanced"][1]["stdout"])["warnings"] == []
    tie = json.loads(odd["tie"][1]["stdout"])
    assert tie["images"]["train"] == {"a": 8, "b": 8, "c": 2} and tie["imbalance_ratio"] == 4.0
    assert (tie["largest_classes"], tie["smallest_classes"]) == (["a", "b"], ["c"])
    assert "imbalance (train): 4.0:1 (a, b / c)" in odd["tie"][0]["stdout"]
    assert "imbalanced 4.0:1 (a, b / c)" in tie["suggestions"][0]["why"]
