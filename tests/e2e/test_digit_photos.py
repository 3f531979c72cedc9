"""Accuracy on the closest thing to a user's own photos the suite can ship: scikit-learn's digits upscaled to
28-64 px with random colours, as JPEG and PNG in ``train/`` and ``test/``, half the classes cut to a fifth of
their train images. The defaults plus ``sampler: balanced`` reach macro-F1 >= 0.90 on the balanced test split
within the default epochs; the same run under ``sampler: none`` is measured beside it for the report."""

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
@pytest.mark.xfail(
    strict=True,
    reason="not met yet: on a busy 2-core machine the defaults + sampler balanced reached test macro-F1 0.572 "
    "(acc 0.603) after the 30 default epochs; see the issue 12 item 7 report",
)
def test_the_defaults_with_a_balanced_sampler_reach_macro_f1_090_on_imbalanced_digit_photos(
    digit_photos: Path, tmp_path: Path
) -> None:
    figures = {}
    for sampler in ("balanced", "none"):
        run_cli(
            [
                "fit",
                "--config",
                str(DEFAULT_CONFIG),
                "--config",
                str(CONFIGS / "data" / "image_folder.yaml"),
                f"--data.root={digit_photos}",
                f"--data.init_args.sampler={sampler}",
                f"--data.init_args.cache_dir={tmp_path / 'cache'}",
                "--data.init_args.num_workers=0",
                f"--trainer.logger.init_args.save_dir={tmp_path}",
                f"--trainer.logger.init_args.name={sampler}",
            ]
        )
        metrics = json.loads((tmp_path / sampler / "version_0" / "metrics.json").read_text())
        assert metrics.get("test_split", "test") == "test"
        figures[sampler] = metrics["test/f1_macro"]
    print(f"\ndigit photos, test macro-F1: sampler balanced {figures['balanced']:.4f}, none {figures['none']:.4f}")
    assert figures["balanced"] >= 0.90, figures
