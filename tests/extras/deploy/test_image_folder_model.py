"""An image-folder model end to end: fit on odd-sized RGB files, then infer on the files predicts what eager
PyTorch predicts on the tensors the data module serves."""

from __future__ import annotations

import numpy as np
import pytest

from litstarter.extras.deploy import infer
from tests.extras.deploy.helpers import eager_predictions, read_csv
from tests.helpers import DEFAULT_CONFIG, best_checkpoint, make_image_folder, run_cli

pytestmark = pytest.mark.slow  # end to end


def test_image_folder_model(tmp_path):
    colours = {"blue": (40, 60, 200), "green": (40, 180, 60), "red": (210, 40, 40)}
    counts = {split: dict.fromkeys(colours, n) for split, n in (("train", 12), ("val", 3), ("test", 4))}
    # RGB images of various sizes and aspect ratios, one colour per class.
    root = make_image_folder(tmp_path / "colours", counts, size=(20, 20), size_jitter=20, colours=colours, noise=25)
    run_cli(
        [
            "fit",
            "--config",
            str(DEFAULT_CONFIG),
            "--config",
            str(DEFAULT_CONFIG.parent / "data" / "image_folder.yaml"),
            f"--data.init_args.root={root}",
            "--data.init_args.image_size=16",
            f"--data.init_args.cache_dir={tmp_path}",
            "--data.init_args.batch_size=12",
            "--data.init_args.num_workers=0",
            "--model.backbone_kwargs={widths: [8, 16]}",
            "--trainer.max_epochs=2",
            f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--trainer.enable_model_summary=false",
        ]
    )
    ckpt = best_checkpoint(tmp_path / "image_folder" / "version_0")
    output = tmp_path / "preds.csv"
    assert infer.main(["--model", str(ckpt), "--input", str(root / "test"), "--output", str(output)]) == 0
    rows = read_csv(output)
    assert len(rows) == 12 and {r["pred"] for r in rows} <= {"blue", "green", "red"}
    assert {r["top1"] for r in rows} | {r["top2"] for r in rows} | {r["top3"] for r in rows} == {"blue", "green", "red"}

    # The file path through the contract lands on exactly the tensors the data module's eval view serves
    # (resize to the 18x18 cache size, centre-crop 16x16), so infer's predictions are eager's on the test split.
    from litstarter.data import ImageFolderDataModule
    from litstarter.extras.deploy.backends import open_model

    backend = open_model(ckpt)
    assert backend.contract.resize_size == (18, 18) and backend.contract.image_size == (16, 16)
    dm = ImageFolderDataModule(str(root), image_size=16, cache_dir=str(tmp_path), num_workers=0)
    dm.setup("fit")
    dm.setup("test")
    files = [root / path for path in dm.cache.column("test", "path")]
    served = np.stack([np.asarray(dm.test_set[i][0]) for i in range(len(files))])
    np.testing.assert_array_equal(np.stack([backend.contract.load_image(f) for f in files]), served)
    by_file = {r["file"]: r["pred"] for r in rows}
    expected = eager_predictions(ckpt, served)
    assert [by_file[str(f)] for f in files] == [dm.class_names[i] for i in expected]
