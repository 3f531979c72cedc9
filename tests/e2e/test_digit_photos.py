"""Accuracy on the closest thing to a user's own photos the suite can ship: scikit-learn's digits upscaled to
28-64 px with random colours, as JPEG and PNG in ``train/`` and ``test/``, half the classes cut to a fifth of
their train images. The defaults plus ``sampler: balanced`` reach macro-F1 >= 0.88 on the balanced test split
within the default epochs: 0.925 where it was first measured, 0.889 on an AMD EPYC with AVX2 and no VNNI (2026-12-07,
the same commit: CPU kernels of another instruction set round otherwise, and one fit's figure moves with them). The
``sampler: none`` figure for the report is measured by hand (one more fit here would
cost the suite a minute).

What it took (docs/data.md has the figures): small_cnn standardises each photo per channel (the random colours
were what it learnt, not the digits), the image-folder config smooths the labels, and the default augmentation
inverts half the training photos.

The generator upscales each 8x8 digit to a square side of 28-64 px (``tests.helpers.write_digit_photos``): an
earlier version drew height and width apart, so the image folder's shorter-side resize and centre crop cut off up
to half of a stretched digit, which no photo of a digit does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import CONFIGS, DEFAULT_CONFIG, run_cli, write_digit_photos

pytestmark = pytest.mark.slow

# Train images of a full class and of a cut one (a fifth), test images per class: every class of scikit-learn's
# digits has >= 174 images, so train and test never share a source digit.
FULL, CUT, TEST = 140, 28, 30
CUT_CLASSES = (1, 3, 5, 7, 9)


@pytest.fixture(scope="module")
def digit_photos(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("digit_photos") / "photos"
    train = [CUT if d in CUT_CLASSES else FULL for d in range(10)]
    return write_digit_photos(root, {"train": train, "test": [TEST] * 10}, sizes=(28, 64), seed=0)


@pytest.mark.timeout(1200)
def test_the_defaults_with_a_balanced_sampler_reach_macro_f1_088_on_imbalanced_digit_photos(
    digit_photos: Path, tmp_path: Path
) -> None:
    run_cli(
        [
            "fit",
            "--config",
            str(DEFAULT_CONFIG),
            "--config",
            str(CONFIGS / "data" / "image_folder.yaml"),
            f"--data.root={digit_photos}",
            "--data.init_args.sampler=balanced",
            "--data.init_args.augmentation.invert=0.5",  # ink and paper in random colours: polarity varies
            f"--data.init_args.cache_dir={tmp_path / 'cache'}",
            "--data.init_args.num_workers=0",
            f"--trainer.logger.init_args.save_dir={tmp_path}",
        ]
    )
    metrics = json.loads((tmp_path / "image_folder" / "version_0" / "metrics.json").read_text())
    assert metrics.get("test_split", "test") == "test"
    print(f"\ndigit photos, sampler balanced: test macro-F1 {metrics['test/f1_macro']:.4f}")
    assert metrics["test/f1_macro"] >= 0.88, metrics
