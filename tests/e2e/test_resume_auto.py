"""``fit --resume auto`` after a SIGKILL: the same command continues the killed run in its own folder, its
TensorBoard events, its CSV and its MLflow run, and ends exactly like the uninterrupted run; a changed model or data
is refused before anything is written, and of two resumes started at once one continues the run and the other says
which process holds it. One killed run (TensorBoard + CSV + MLflow) serves every test here, in file order.

The checkpoint's settings decide the model of ``test --ckpt_path``, out loud, and a ``fit --ckpt_path`` with another
architecture is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import CONFIGS, DEFAULT_CONFIG, REPO, assert_refused, tensorboard_events

STEPS_PER_EPOCH = 20  # digits: 1257 train images / batch 64
EPOCHS = 3  # as the digits_run fixture, the uninterrupted reference
KILLER = {"class_path": "tests.e2e.fault_injection.KillAtStep", "init_args": {"step": 2 * STEPS_PER_EPOCH}}
FIT = [
    "fit",
    "--config",
    str(DEFAULT_CONFIG),
    "--config",
    str(CONFIGS / "logger" / "all.yaml"),  # TensorBoard + CSV + MLflow (sqlite under ./runs)
    f"--trainer.max_epochs={EPOCHS}",
    "--data.init_args.num_workers=0",
]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "LITSTARTER_TRACEBACK")}
    return {**env, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "litstarter", *args]
    return subprocess.Popen(command, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def killed(tmp_path_factory) -> Path:
    """The working folder of a fit SIGKILLed as epoch 2 starts (after epoch 1's last.ckpt): ``runs/digits/version_0``
    and ``runs/mlflow.db`` under it."""
    work = tmp_path_factory.mktemp("killed")
    proc = _start([*FIT, f"--trainer.callbacks+={json.dumps(KILLER)}"], work)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, err[-3000:]
    run = work / "runs" / "digits" / "version_0"
    assert not (run / "metrics.json").exists()
    for path in sorted((run / "checkpoints").glob("*.ckpt")):  # none is half-written
        state = torch.load(path, weights_only=True, map_location="cpu")
        assert all(torch.isfinite(v).all() for v in state["state_dict"].values() if v.is_floating_point())
    last = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert last["global_step"] == 2 * STEPS_PER_EPOCH and last["epoch"] == 1  # the last finished epoch
    return work


def test_a_changed_model_or_data_is_refused_and_the_checkpoint_overrules_test_out_loud(
    killed: Path, capsys, monkeypatch
) -> None:
    from litstarter.__main__ import main

    monkeypatch.chdir(killed)  # in this process: the suite has Lightning imported already
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    run = killed / "runs" / "digits" / "version_0"
    last = run / "checkpoints" / "last.ckpt"
    before = _tree(run)
    other = [f"--trainer.logger.init_args.save_dir={killed / 'other'}", "--data.init_args.num_workers=0"]
    resnet = ["--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "model" / "resnet18.yaml"), *other]
    fresh = ["fit", "--config", str(DEFAULT_CONFIG), "--resume", "auto", "--trainer.max_epochs=0", *other[:1]]
    cases = [
        [*FIT, "--resume", "auto", "--model.backbone", "resnet18"],
        [*FIT, "--resume", "auto", "--data.init_args.classes", "[0, 1, 2, 3, 4]"],
        ["test", *resnet, f"--ckpt_path={last}", "--trainer.limit_test_batches=1"],
        ["fit", *resnet, f"--ckpt_path={last}"],
        [*fresh, "--test_after_fit=false", "--trainer.logger.init_args.name=new"],
    ]
    results = []
    for argv in cases:
        code = main(argv)
        results.append({"argv": argv, "code": code, "stderr": capsys.readouterr().err})
    backbone, classes, tested, refit, started = results
    assert_refused(backbone, 2, "--resume", "model.backbone: 'small_cnn' in the run, 'resnet18' now")
    assert_refused(classes, 2, "data.init_args.classes: None in the run, [0, 1, 2, 3, 4] now")
    assert _tree(run) == before, "a refused resume must write nothing into the run"

    assert tested["code"] == 0, tested["stderr"][-3000:]
    (line,) = [x for x in tested["stderr"].splitlines() if "rebuilds the model from its own settings" in x]
    assert "model.backbone: resnet18 in your config, small_cnn in the checkpoint" in line, line
    assert "model.weights: IMAGENET1K_V1 in your config, None in the checkpoint" in line, line
    assert line.endswith("using the checkpoint's"), line
    assert_refused(refit, 2, "another architecture", "model.backbone: resnet18 in your config", "model.init_from")

    assert started["code"] == 0, started["stderr"][-3000:]
    assert "--resume auto: no run in" in started["stderr"] and "starting a fresh run" in started["stderr"]
    assert "resume: null" in (killed / "other" / "new" / "version_0" / "config.yaml").read_text()


def _merged(events_files: list[Path], tag: str) -> list[tuple[int, float]]:
    """``(step, value)`` of ``tag`` across a run's event files in the order written, each step's last value only
    (a resume may log a step again); asserts that what remains is in increasing step order."""
    written = []
    for path in events_files:  # named events.out.tfevents.<unix time>...: sorted is the order written
        events = tensorboard_events(path)
        if tag in events.Tags()["scalars"]:
            written += [(e.step, e.value) for e in events.Scalars(tag)]
    last = {step: i for i, (step, _) in enumerate(written)}
    kept = [written[i] for i in sorted(last.values())]
    assert [s for s, _ in kept] == sorted({s for s, _ in kept}), f"{tag}: steps go back: {kept}"
    return kept


def test_two_resumes_at_once_one_continues_the_run_exactly_and_the_other_names_it(
    killed: Path, digits_run: Path
) -> None:
    from mlflow import MlflowClient

    run = killed / "runs" / "digits" / "version_0"
    run_id = json.loads((run / "mlflow.json").read_text())["run_id"]
    procs = [_start([*FIT, "--resume", "auto"], killed) for _ in range(2)]
    results = [(p, *p.communicate(timeout=300)) for p in procs]
    winners = [r for r in results if r[0].returncode == 0]
    assert len(winners) == 1, [(p.returncode, err[-2000:]) for p, _, err in results]
    (winner,), (loser,) = winners, [r for r in results if r[0] is not winners[0][0]]
    result = {"argv": "--resume auto", "code": loser[0].returncode, "stderr": loser[2]}
    assert_refused(result, 2, f"'{run.resolve()}' is in use by another fit (process {winner[0].pid} on ")
    resumed = [x for x in winner[2].splitlines() if x.startswith("--resume: continuing")]
    assert len(resumed) == 1 and f"'{Path('runs/digits/version_0')}'" in resumed[0], winner[2][-3000:]
    assert "from checkpoints/last.ckpt (epoch 1, step 40)" in resumed[0] and run_id in resumed[0]

    assert sorted(p.name for p in (killed / "runs" / "digits").iterdir()) == ["version_0"]
    # The run's own config.yaml stays as it was (no ckpt_path): `--config <run>/config.yaml` reruns, not resumes.
    assert "ckpt_path: null" in (run / "config.yaml").read_text()
    assert "last.ckpt" in (run / "config.resume.yaml").read_text()
    assert json.loads((run / "metrics.json").read_text()) == json.loads((digits_run / "metrics.json").read_text())
    final = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    reference = torch.load(digits_run / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert final["global_step"] == EPOCHS * STEPS_PER_EPOCH
    for key, value in reference["state_dict"].items():
        assert torch.equal(final["state_dict"][key], value), f"{key} differs from the uninterrupted run"

    ours = sorted(run.glob("events.out.tfevents.*"))
    assert len(ours) >= 2, "the resume writes its own events file into the same folder"
    for tag in ("train/loss_step", "val/acc"):
        mine, theirs = _merged(ours, tag), _merged(sorted(digits_run.glob("events.out.tfevents.*")), tag)
        assert [s for s, _ in mine] == [s for s, _ in theirs], tag
        assert [v for _, v in mine] == pytest.approx([v for _, v in theirs], abs=1e-6), tag

    client = MlflowClient(f"sqlite:///{killed / 'runs' / 'mlflow.db'}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "digits"]
    assert [r.info.run_id for r in client.search_runs([experiment.experiment_id])] == [run_id]
    assert len(client.get_metric_history(run_id, "val/acc")) == EPOCHS  # epochs 0 and 1, then the resumed 2
    assert client.get_run(run_id).info.status == "FINISHED"
