"""Every segmentation format through the real ``fit``: the same pictures and shapes (tests/polygon_sets.py) written as
index PNGs, LabelMe, CVAT for images and COCO json (polygons, compressed and uncompressed RLE) each fit (1 epoch, one
seed) to the same ``metrics.json``, within 1e-4: a format changes how the masks are read, never what is learnt. One
subprocess runs the fits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import CONFIGS, DEFAULT_CONFIG, run_cases
from tests.polygon_sets import CLASSES, WRITERS, pictures, write

pytestmark = pytest.mark.slow
#: Metrics agree to this across formats.
TOLERANCE = 1e-4


def fit_args(root: Path, runs: Path, name: str) -> list[str]:
    return [
        "fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
        "--config", str(CONFIGS / "task" / "segmentation.yaml"), "--data.root", str(root),
        f"--data.init_args.cache_dir={runs / ('cache-' + name)}", "--data.init_args.num_workers=0",
        "--data.init_args.batch_size=8", "--data.init_args.image_size=32", "--trainer.max_epochs=1",
        f"--trainer.logger.init_args.save_dir={runs}", f"--trainer.logger.init_args.name={name}",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def fits(tmp_path_factory) -> dict:
    """One fit per writer of the same 30 pictures."""
    tmp = tmp_path_factory.mktemp("polygon_formats")
    shown, runs = pictures(30, seed=5), tmp / "runs"
    roots = {form: tmp / form for form in WRITERS}
    for form, root in roots.items():
        write(form, root, shown)
    cases = [{"argv": fit_args(roots[form], runs, form)} for form in WRITERS]
    return {"runs": runs, "results": dict(zip(WRITERS, run_cases(tmp, cases, timeout=1800), strict=True))}


def test_each_format_fits_to_the_index_pngs_metrics(fits) -> None:
    metrics = {}
    for form in WRITERS:
        result = fits["results"][form]
        assert result["code"] == 0, (form, result["stderr"][-3000:])
        metrics[form] = json.loads((fits["runs"] / form / "version_0" / "metrics.json").read_text())
    first = {k: v for k, v in metrics["masks"].items() if isinstance(v, float)}
    assert {"test/miou", *(f"test/iou/{c}" for c in CLASSES)} <= set(first), sorted(first)
    assert first["test/miou"] > 0, first  # it learned something: agreement is not of zeros
    for form, values in metrics.items():
        assert values.keys() == metrics["masks"].keys(), form
        assert all(abs(values[k] - v) <= TOLERANCE for k, v in first.items()), (form, values, first)
