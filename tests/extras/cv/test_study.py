"""A study's folder: another study of the same name and k (other data, config or seed) gets a folder of its own,
``cv-<k>-v1``, ...; the same study run again resumes in its own (how a killed study resumes is tests/extras/cv/
test_cv.py's); two started at once never share one."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from litstarter.extras.cv.study import STUDY_FILE, claim_study
from tests.helpers import DEFAULT_CONFIG, FOLDER_CONFIG, make_image_folder, run_litstarter


def study(root: str, seed: int = 42) -> dict:
    return {"folds": 2, "seed": seed, "data": f"digest of {root}", "config": {"data": {"root": root}}}


def test_another_study_gets_its_own_folder_and_the_same_study_its_old_one(tmp_path: Path) -> None:
    base = tmp_path / "runs" / "image_folder" / "cv-2"
    first = claim_study(base, study("a"))
    (first / "cv_metrics.json").write_text("{}")
    assert first == base
    assert claim_study(base, study("b")) == base.with_name("cv-2-v1")  # not refused, not the first's folder
    assert claim_study(base, study("a", seed=1)) == base.with_name("cv-2-v2")
    assert claim_study(base, study("b")) == base.with_name("cv-2-v1")  # run again: resumes in its own
    assert claim_study(base, study("a")) == base
    assert json.loads((base / STUDY_FILE).read_text()) == study("a") and (base / "cv_metrics.json").exists()
    # The first folder removed: the second study still resumes in its own, a new one takes the free name.
    (base / STUDY_FILE).unlink()
    assert claim_study(base, study("b")) == base.with_name("cv-2-v1")
    assert claim_study(base, study("c")) == base


def test_studies_started_together_never_share_a_folder(tmp_path: Path) -> None:
    base = tmp_path / "cv-2"
    with ThreadPoolExecutor(8) as pool:
        folders = list(pool.map(lambda i: claim_study(base, study(str(i))), range(16)))
    assert len(set(folders)) == 16
    for i, folder in enumerate(folders):
        assert json.loads((folder / STUDY_FILE).read_text()) == study(str(i))
    assert not list(tmp_path.rglob(".study.json.*"))  # no temporary file left


@pytest.mark.slow
def test_a_second_cv_on_other_data_runs_beside_the_first(tmp_path: Path) -> None:
    counts = {"train": {"a": 8, "b": 8}, "test": {"a": 2, "b": 2}}
    roots = [
        make_image_folder(tmp_path / name, counts, colours="distinct", spread=25, noise=20, seed=i)
        for i, name in enumerate("xy")
    ]
    save_dir = tmp_path / "runs"

    def cv(root: Path):
        return run_litstarter(
            ["cv", "--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), "--folds", "2",
             f"--data.init_args.root={root}", f"--trainer.logger.init_args.save_dir={save_dir}",
             "--trainer.max_epochs=1", "--data.init_args.num_workers=0", "--data.init_args.batch_size=16",
             "--baseline=false"],
            cwd=tmp_path,  # the image cache (runs/cache) too
            timeout=600,
        )  # fmt: skip

    cv(roots[0])
    first = save_dir / "image_folder" / "cv-2"
    before = {p.relative_to(first): p.read_bytes() for p in first.rglob("*.json")}
    second = cv(roots[1])  # main refused it: "cv-2 holds a study of another config, seed or data"
    assert f"study folder {first.with_name('cv-2-v1')}" in second.stderr
    assert {p.relative_to(first): p.read_bytes() for p in first.rglob("*.json")} == before  # the first untouched
    for folder, root in ((first, roots[0]), (first.with_name("cv-2-v1"), roots[1])):
        assert json.loads((folder / STUDY_FILE).read_text())["config"]["data"]["init_args"]["root"] == str(root)
        assert (folder / "cv_metrics.json").is_file()
    assert sorted(p.name for p in first.parent.iterdir()) == ["cv-2", "cv-2-v1"]
