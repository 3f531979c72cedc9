"""``inspect`` on a mask folder: the pixel share of each class and the images holding each, equal to a hand count of
the cached masks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.helpers import DEFAULT_CONFIG, FOLDER_CONFIG, write_mask_folder


def test_pixel_shares_and_images_per_class_equal_a_count_of_the_cache(tmp_path: Path, capsys) -> None:
    from litstarter.data import ImageFolderDataModule
    from litstarter.extras.inspect.command import main

    root = write_mask_folder(tmp_path / "pool", 30)
    cache_dir = tmp_path / "cache"
    args = ["--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), f"--data.init_args.root={root}",
            "--data.init_args.image_size=48", f"--data.init_args.cache_dir={cache_dir}"]  # fmt: skip
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["target_kind"] == "mask" and report["baseline"] is None
    cache = ImageFolderDataModule(str(root), image_size=48, cache_dir=str(cache_dir)).load_cache()
    names = report["classes"]
    for split in cache.splits:
        masks = np.asarray(cache.targets(split))
        counts = np.bincount(masks.ravel(), minlength=len(names))
        shares = dict(zip(names, (counts / counts.sum()).round(6).tolist(), strict=True))
        assert report["pixels"][split] == shares
        held = {name: int(sum((m == i).any() for m in masks)) for i, name in enumerate(names)}
        assert report["images"][split] == held == report["images_with"][split]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "pixels (train): background" in table and "ignored 0.0%" in table
