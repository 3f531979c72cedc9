"""A project ``litstarter new`` writes, used as its owner would: ``make train`` and ``make test`` in it, inside this
suite's virtual environment (its Makefile then installs nothing). Its fit equals the same fit through the library's
task; an edit to its task.py's loss changes what it logs; export, infer, serve, cv, tune and inspect run on its task.

Both sides of each comparison train a smaller example than ``make train`` does (``SMALL``), for time alone."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from litstarter.new import answers, parse_extras, render
from tests.helpers import CONFIGS, REPO, run_litstarter
from tests.in_project import run_jobs
from tests.test_new import LIBRARY_CONFIGS

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("make") is None, reason="needs make")]

#: A smaller example on both sides, and the extras each project is written with.
SMALL = {"classification": [], "multilabel": ["--data.init_args.size=300"], "regression": ["--data.init_args.size=300"],
         "segmentation": ["--data.init_args.size=200"], "detection": ["--data.init_args.size=120"]}  # fmt: skip
EXTRAS = {"classification": "deploy,serve,tune", "detection": "deploy"}


def make_env() -> dict[str, str]:
    """This suite's venv, active: the project's Makefile finds a compatible litstarter and installs nothing. Were
    the venv's litstarter metadata stale, the install would fail on the source given here, never replace it."""
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    return {
        **os.environ,
        "VIRTUAL_ENV": sys.prefix,
        "PATH": path,
        "LITSTARTER_SOURCE": "file:///nonexistent/litstarter",
    }


def make(project: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(["make", *args], cwd=project, env=make_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (
        f"make {' '.join(args)} in {project.name}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def new_project(root: Path, task: str, name: str | None = None) -> Path:
    name = name or f"my_{task}"
    target = root / name
    render(target, answers(target, task, parse_extras(EXTRAS.get(task, ""), task), name, REPO.as_uri()))
    return target


def metrics_of(run_root: Path) -> dict[str, float]:
    (path,) = run_root.rglob("metrics.json")
    return {k: round(v, 4) for k, v in json.loads(path.read_text()).items() if isinstance(v, (int, float))}


@pytest.mark.parametrize("task", sorted(LIBRARY_CONFIGS))
def test_make_train_and_make_test_in_a_new_project_match_the_librarys_task(task: str, tmp_path: Path) -> None:
    project = new_project(tmp_path, task)
    train = make(project, "train", f"TRAIN_ARGS=--trainer.max_epochs 2 {' '.join(SMALL[task])}")
    assert "nothing to install" in train.stdout and "litstarter fit --config configs/default.yaml" in train.stdout
    configs = [a for c in LIBRARY_CONFIGS[task] for a in ("--config", str(CONFIGS / c))]
    library = ["fit", "--config", str(CONFIGS / "default.yaml"), *configs, "--trainer.max_epochs=2", *SMALL[task],
               f"--trainer.logger.init_args.save_dir={tmp_path / 'library'}"]  # fmt: skip
    run_litstarter(library, timeout=900)
    ours, theirs = metrics_of(project / "runs"), metrics_of(tmp_path / "library")
    assert any(k.startswith("test/") for k in ours) and ours == theirs
    tested = make(project, "test", "PYTEST_ARGS=-q -p no:randomly")
    assert " passed" in tested.stdout and "failed" not in tested.stdout


def test_an_edit_to_the_loss_in_task_py_changes_what_the_fit_logs(tmp_path: Path) -> None:
    """The same first batch through an unedited and an edited copy: the loss the fit logs is three times as large.
    Both fits run in a process of their own (tests/in_project.py), the projects' tasks never imported here."""
    plain, edited = new_project(tmp_path, "classification", "plain"), new_project(tmp_path, "classification", "edited")
    task_py = edited / "src" / "edited" / "task.py"
    source = task_py.read_text()
    assert source.count("        return self.criterion(logits, targets)\n") == 1
    loss = "return self.criterion(logits, targets)"
    task_py.write_text(source.replace(loss, f"return 3.0 * {loss.removeprefix('return ')}"))
    jobs = []
    for project in (plain, edited):
        save = f"--trainer.logger.init_args.save_dir={tmp_path / project.name}"
        args = ["--config", str(project / "configs" / "default.yaml"), "--data.init_args.num_workers=0", save]
        jobs.append({"src": str(project / "src"), "mode": "first_loss", "args": args})
    logged = dict(zip(("plain", "edited"), run_jobs(jobs), strict=True))
    assert [logged[name]["module"] for name in logged] == ["plain.task", "edited.task"]
    assert logged["edited"]["loss"] == pytest.approx(3.0 * logged["plain"]["loss"], rel=1e-5), logged


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Path:
    """A classification project (deploy, serve and tune chosen) after a one-epoch fit of its own task."""
    project = new_project(tmp_path_factory.mktemp("shop"), "classification", "shop")
    in_project(project, "fit", *CONFIG, "--trainer.max_epochs=1", "--baseline=false")
    assert "class_path: shop.task.ImageClassifier" in (project / "runs/shop/version_0/config.yaml").read_text()
    return project


CONFIG = ("--config", "configs/default.yaml", "--data.init_args.num_workers=0")


def in_project(project: Path, *args: str) -> subprocess.CompletedProcess:
    """``litstarter ARGS`` in the project's folder, its package on the path as its Makefile puts it."""
    return run_litstarter(list(args), cwd=project, env={"PYTHONPATH": str(project / "src")}, timeout=900)


def digit_files(folder: Path, count: int, classes: int = 0) -> list[Path]:
    """``count`` of scikit-learn's digits as PNGs in ``folder`` (in ``classes`` class folders, if any)."""
    from PIL import Image
    from sklearn.datasets import load_digits

    paths = []
    for i, digit in enumerate(load_digits().images[:count]):
        path = folder / (str(i % classes) if classes else "") / f"{i}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray((digit * 16).clip(0, 255).astype("uint8")).save(path)
        paths.append(path)
    return paths


def test_the_projects_checkpoint_exports_and_infer_answers(shop: Path) -> None:
    ckpt = shop / "runs" / "shop" / "version_0" / "checkpoints" / "last.ckpt"
    in_project(shop, "export", "--ckpt_path", str(ckpt), "--out", "export", "--formats", "onnx")
    digit_files(shop / "images", 3)
    in_project(shop, "infer", "--model", "export/model.onnx", "--input", "images", "--output", "preds.csv")
    assert len((shop / "preds.csv").read_text().splitlines()) == 4


def test_serve_answers_with_the_projects_export(shop: Path) -> None:
    from tests.extras.deploy.test_export_default import serve_once

    ckpt = shop / "runs" / "shop" / "version_0" / "checkpoints" / "last.ckpt"
    in_project(shop, "export", "--ckpt_path", str(ckpt), "--out", "served", "--formats", "onnx")
    (image,) = digit_files(shop / "one", 1)
    served = serve_once(shop / "served" / "model.onnx", image.read_bytes())
    assert served["predict"].status_code == 200 and "model.onnx: passed" in json.dumps(served["info"])


def test_cv_runs_the_projects_task_fold_by_fold(shop: Path) -> None:
    in_project(shop, "cv", *CONFIG, "--folds", "2", "--trainer.max_epochs=1")
    (study,) = (shop / "runs").rglob("cv-2*/study.json")
    folds = list(study.parent.rglob("config.yaml"))
    assert len(folds) == 2 and all("class_path: shop.task.ImageClassifier" in c.read_text() for c in folds)


def test_tune_searches_the_projects_task(shop: Path) -> None:
    tuned = in_project(
        shop, "tune", *CONFIG, "--search", "configs/search.yaml", "--trials", "2", "--trainer.max_epochs=1"
    )
    (best,) = (shop / "runs").rglob("best.yaml")
    assert "model:" in best.read_text() and "lr:" in best.read_text(), tuned.stdout[-2000:]
    trials = list(best.parent.rglob("config.yaml"))
    assert len(trials) == 2 and all("class_path: shop.task.ImageClassifier" in c.read_text() for c in trials)


def test_inspect_reads_a_folder_for_the_projects_task(shop: Path) -> None:
    digit_files(shop / "photos", 40, classes=2)
    inspected = in_project(shop, "inspect", *CONFIG, "--config", "configs/image_folder.yaml", "--data.root", "photos")
    assert re.search(r"^total\s+32\s+4\s+4$", inspected.stdout, re.M), inspected.stdout  # the project's splits


def test_the_projects_notebook_runs_top_to_bottom_on_its_own_task(tmp_path: Path, monkeypatch) -> None:
    from tests.e2e.test_notebooks import run_notebook

    project = new_project(tmp_path, "regression", "counts")
    outputs = run_notebook(project / "notebooks" / "quickstart.ipynb", tmp_path, monkeypatch, epochs=1)
    assert "counts.task" in outputs and "'test/mae':" in outputs
