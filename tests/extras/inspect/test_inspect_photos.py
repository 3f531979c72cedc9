"""`litstarter inspect` on real photo crops (scikit-learn's two sample photos, cut into tiles that never overlap):
every planted near-duplicate across splits is found (a re-saved PNG, a JPEG at quality 75, a copy resized to 80%,
a 5% crop) and no pair of distinct tiles; a fit's leakage warning names the same pairs; each quality check names
its planted file; the size line gives real images."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from litstarter._engine.images.leakage import describe
from tests.helpers import CONFIGS, DEFAULT_CONFIG, run_cases
from tests.photos import near_copies, quality_plants, sample_photos, tile_crops

pytestmark = pytest.mark.slow

FOLDER_CONFIG = str(CONFIGS / "data" / "image_folder.yaml")
#: china.jpg's top 120 rows are overcast sky: tiles of it are near-white, and the bright check names them (as it
#: should: they hold nothing but sky). docs/inspect.md gives that count on random crops.
SKY_ROWS = 120


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> tuple[Path, dict]:
    """``root/{train,test}/{china,flower}``: 4 x 5 tiles of each photo, every fifth in test; the near copies of one
    train tile and a byte-identical copy of it in test; one file per quality check in train."""
    root = tmp_path_factory.mktemp("photos") / "tiles"
    sources = sample_photos()
    sources["china"] = sources["china"].crop((0, SKY_ROWS, 640, 427))
    for name, photo in sources.items():
        for i, tile in enumerate(tile_crops(photo, 4, 5, seed=len(name))):
            folder = root / ("test" if i % 5 == 0 else "train") / name
            folder.mkdir(parents=True, exist_ok=True)
            tile.save(folder / f"{i:02d}.png")
    original = root / "train" / "china" / "07.png"
    with Image.open(original) as image:
        for name, (copy, options) in near_copies(image.convert("RGB")).items():
            copy.save(root / "test" / "china" / f"copy_{name}", **options)
    shutil.copy(original, root / "test" / "flower" / "exact.png")
    with Image.open(root / "train" / "flower" / "08.png") as image:
        for check, planted in quality_plants(image.convert("RGB")).items():
            planted.save(root / "train" / "flower" / f"q_{check}.png")
    cache = tmp_path_factory.mktemp("cache")
    common = ["--config", str(DEFAULT_CONFIG), "--config", FOLDER_CONFIG, "--data.root", str(root),
              f"--data.init_args.cache_dir={cache}", "--data.image_size", "64"]  # fmt: skip
    fit = ["fit", *common, "--trainer.max_epochs=1", "--trainer.limit_train_batches=1", "--trainer.limit_val_batches=1",
           "--trainer.limit_test_batches=1", "--model.backbone_kwargs={widths: [8]}", "--data.init_args.num_workers=0",
           f"--trainer.logger.init_args.save_dir={cache}"]  # fmt: skip
    results = run_cases(tmp_path_factory.mktemp("cases"), [{"argv": ["inspect", *common, "--json"]}, {"argv": fit}])
    assert results[0]["code"] == 0, results[0]["stderr"][-3000:]
    return root, {"report": json.loads(results[0]["stdout"]), "fit": results[1]}


def test_every_planted_near_duplicate_is_found_and_no_distinct_tile(photos) -> None:
    _, found = photos
    report = found["report"]
    assert [leak["files"] for leak in report["leaks"]] == [
        {"train": ["train/china/07.png"], "test": ["test/flower/exact.png"]}
    ]  # exact copies reported as before, not again as near-duplicates
    pairs = {tuple(pair["files"].values()): pair["distance"] for pair in report["near_duplicates"]}
    planted = {("train/china/07.png", f"test/china/copy_{name}") for name in near_copies(Image.new("RGB", (8, 8)))}
    assert set(pairs) == planted, pairs  # every copy found, and no two distinct tiles (40 of them) paired
    assert all(0 <= d <= report["near_duplicate_distance"] for d in pairs.values())


def test_a_fit_warns_with_the_same_pairs(photos) -> None:
    _, found = photos
    fit, report = found["fit"], found["report"]
    assert fit["code"] == 0, fit["stderr"][-3000:]
    warned = [line for line in fit["stderr"].splitlines() if "near-duplicates" in line]
    assert len(warned) == 1, fit["stderr"][-3000:]
    assert f"{report['near_duplicate_count']} pair(s)" in warned[0]
    for pair in report["near_duplicates"][:3]:  # the warning shows the first three, as inspect lists them
        assert describe(pair) in warned[0]
    assert "train/china/07.png = test/flower/exact.png" in fit["stderr"]


def test_each_quality_check_names_its_planted_file_and_few_tiles(photos) -> None:
    root, found = photos
    quality = found["report"]["quality"]
    tiles = [p for p in root.rglob("*.png") if p.name[0].isdigit()]
    for check, result in quality.items():
        assert f"train/flower/q_{check}.png" in result["files"], (check, result)
        real = [f for f in result["files"] if Path(f).name[0].isdigit()]
        assert len(real) <= len(tiles) // 10, (check, real)  # a check that flags a tenth of real photos is noise
    for check in ("dark", "grey_in_colour", "near_constant"):  # (a tile itself may be over 2.5:1)
        assert [Path(f).name for f in quality[check]["files"]] == [f"q_{check}.png"], quality[check]


def test_the_size_line_gives_real_images(photos) -> None:
    root, found = photos
    sizes = found["report"]["sizes"]
    actual = {}
    for path in root.rglob("*.*"):
        with Image.open(path) as image:
            actual[str(path.relative_to(root))] = image.size
    areas = sorted(w * h for w, h in actual.values())
    for name, area in (("smallest", areas[0]), ("median", areas[(len(areas) - 1) // 2]), ("largest", areas[-1])):
        picked = sizes[name]
        assert actual[picked["path"]] == (picked["width"], picked["height"])  # a real image's own size
        assert picked["width"] * picked["height"] == area
