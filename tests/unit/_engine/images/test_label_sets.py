"""Multi-label labels files: both forms, empty sets, the vocabulary, the stratified split, and bad rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from litstarter._engine.images.folder import CachedImageFolder
from litstarter._engine.images.label_sets import multi_hot, stratify
from litstarter._engine.images.labels_csv import read_labels_file
from litstarter.errors import BadInputError
from litstarter.thresholds import tune_thresholds
from tests.helpers import write_image

SETS = [("cat",), ("cat", "dog"), (), ("bird", "dog"), ("dog",), ("cat",), ("bird",), ("cat", "dog"), (), ("dog",)]
NAMES = ["bird", "cat", "dog"]


def write_pool(root: Path, sets=SETS, split: list[str] | None = None) -> Path:
    """``root/img/<i>.png`` and the same labels in both forms: ``labels.csv`` and ``columns.csv``."""
    for i in range(len(sets)):
        write_image(root / "img" / f"{i}.png", seed=i)
    extra = ",split" if split else ""
    rows = [f"img/{i}.png,{';'.join(s)}" + (f",{split[i]}" if split else "") for i, s in enumerate(sets)]
    (root / "labels.csv").write_text(f"path,labels{extra}\n" + "\n".join(rows) + "\n")
    columns = [f"img/{i}.png," + ",".join(str(int(n in s)) for n in NAMES) + (f",{split[i]}" if split else "")
               for i, s in enumerate(sets)]  # fmt: skip
    (root / "columns.csv").write_text(f"path,{','.join(NAMES)}{extra}\n" + "\n".join(columns) + "\n")
    return root


def test_both_forms_read_the_same_label_sets_and_say_which_form(tmp_path: Path) -> None:
    root = write_pool(tmp_path)
    by_labels, form, _ = read_labels_file(root / "labels.csv", root)
    by_columns, other, _ = read_labels_file(root / "columns.csv", root)
    assert (form, other) == ("labels", "columns")
    assert [r.labels for r in by_labels] == [r.labels for r in by_columns] == [tuple(sorted(s)) for s in SETS]
    folders = [CachedImageFolder(root, name, image_size=16, cache_dir=tmp_path / "c") for name in ("labels.csv",
               "columns.csv")]  # fmt: skip
    assert [f.class_names for f in folders] == [NAMES, NAMES]
    assert all(f.target_kind == "label_set" for f in folders)
    listings = [f.listing() for f in folders]
    assert [s.path for s in listings[0].sources["val"]] == [s.path for s in listings[1].sources["val"]]
    assert "multi-label" in listings[0].layout and "2 image(s) with none" in listings[0].layout
    assert "one 0/1 column per label" in listings[1].layout


def test_targets_follow_the_cache_order_and_empty_sets_are_rows_of_zeros(tmp_path: Path) -> None:
    folder = CachedImageFolder(write_pool(tmp_path), "labels.csv", image_size=16, cache_dir=tmp_path / "c")
    cache, _ = folder.prepare()
    by_path = {f"img/{i}.png": s for i, s in enumerate(SETS)}
    for split in cache.splits:
        targets = cache.targets(split)
        expected = multi_hot([by_path[p] for p in cache.column(split, "path")], NAMES)
        assert np.array_equal(targets, expected)
    assert sum(int(cache.targets(s).sum(1).__eq__(0).sum()) for s in cache.splits) == 2


def test_a_quoted_separator_still_separates_and_repeats_collapse(tmp_path: Path) -> None:
    write_image(tmp_path / "a.png")
    (tmp_path / "labels.csv").write_text('path,labels\n"a.png","cat;dog;cat"\n')
    (rows, _, _) = read_labels_file(tmp_path / "labels.csv", tmp_path)
    assert rows[0].labels == ("cat", "dog")


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("path,labels,split\na.png,cat,train\nb.png,cat;fox,val\n", ["line 3", "'b.png'", "['fox']", "vocabulary"]),
        ("path,labels\na.png,cat\n,dog\n", ["line 3", "'path' is empty"]),
        ("path,labels\na.png,cat;;dog\n", ["line 2", "empty name"]),
        ("path,cat,dog\na.png,1,yes\n", ["line 2", "column 'dog'", "0 or 1"]),
        ("path,cat,Cat,owl\na.png,1,0,1\n", ["['Cat', 'cat']", "more than once", "line 1"]),
    ],
    ids=["label-not-in-train", "empty-path", "empty-name", "not-0-or-1", "repeated-column"],
)
def test_a_bad_row_is_one_sentence_naming_it(tmp_path: Path, text: str, named: list[str]) -> None:
    (tmp_path / "labels.csv").write_text(text)
    with pytest.raises(BadInputError) as err:
        read_labels_file(tmp_path / "labels.csv", tmp_path)
    message = str(err.value)
    assert "\n" not in message
    for name in named:
        assert name in message, message


def test_the_split_spreads_every_label_by_the_fractions_and_is_seeded() -> None:
    rng = np.random.default_rng(0)
    targets = (rng.random((600, 6)) < np.array([0.5, 0.3, 0.2, 0.1, 0.05, 0.02])).astype(np.float32)
    splits = np.array(stratify(targets, {"train": 0.8, "val": 0.1, "test": 0.1}, seed=3))
    assert list(splits) == stratify(targets, {"train": 0.8, "val": 0.1, "test": 0.1}, seed=3)
    for split, share in (("train", 0.8), ("val", 0.1), ("test", 0.1)):
        assert abs((splits == split).mean() - share) < 0.02
        positives = targets[splits == split].sum(0)
        assert np.all(np.abs(positives - share * targets.sum(0)) <= 1.5), (split, positives)


def test_tuned_thresholds_reach_at_least_the_f1_at_one_half() -> None:
    from torchmetrics.functional.classification import multilabel_f1_score

    gen = torch.Generator().manual_seed(0)
    targets = (torch.rand(200, 4, generator=gen) < 0.3).float()
    targets[:, 3] = 0  # no positives: keeps 0.5
    probs = (0.3 * targets + 0.7 * torch.rand(200, 4, generator=gen)).clamp(0, 1)
    tuned = tune_thresholds(probs, targets)
    assert tuned[3] == 0.5
    f1 = [multilabel_f1_score((probs >= t).int(), targets.int(), 4, average=None, zero_division=0) for t in
          (tuned, torch.full((4,), 0.5))]  # fmt: skip
    assert torch.all(f1[0] >= f1[1] - 1e-6) and f1[0].mean() > f1[1].mean()
