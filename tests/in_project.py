"""Run a generated project's code in a process of its own: imported into the suite's, a project's task (a copy of
``ImageClassifier``, of the same name) would make a bare ``--model ImageClassifier`` ambiguous for every later test
on the same xdist worker.

    python -m tests.in_project <jobs.json>    # prints one JSON answer per job

A job: ``{"src": <the project's src/>, "mode": "config" | "first_loss" | "task", "args": [...]}``:

* ``config``: the config ``fit ARGS`` resolves to (``--print_config``), as a dict;
* ``first_loss``: the loss a one-batch fit logs (``train/loss_epoch`` of ``fit ARGS`` with one training batch), and
  the module of the task the fit built;
* ``task``: for ``args[0]``, a ``module.Class`` path, the names of its bases.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml


def run_jobs(jobs: list[dict]) -> list:
    """Each job's answer, in one fresh process (one import of torch for all of them)."""
    with tempfile.TemporaryDirectory(prefix="in-project-") as scratch:
        path = Path(scratch, "jobs.json")
        path.write_text(json.dumps(jobs))
        done = subprocess.run(
            [sys.executable, "-m", "tests.in_project", str(path)],
            cwd=Path(__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            timeout=900,
        )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def answer(job: dict):
    from litstarter.cli import main

    sys.path.insert(0, job["src"])
    try:
        if job["mode"] == "task":
            module, _, name = job["args"][0].rpartition(".")
            return [base.__name__ for base in getattr(importlib.import_module(module), name).__mro__[1:]]
        if job["mode"] == "config":
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.suppress(SystemExit):
                main(["fit", *job["args"], "--print_config"])
            return yaml.safe_load(printed.getvalue())
        one_batch = ["--trainer.limit_train_batches=1", "--trainer.limit_val_batches=1", "--test_after_fit=false"]
        with contextlib.redirect_stdout(sys.stderr):
            cli = main(["fit", *job["args"], "--trainer.max_epochs=1", *one_batch])
        return {"loss": float(cli.trainer.callback_metrics["train/loss_epoch"]), "module": type(cli.model).__module__}
    finally:
        sys.path.remove(job["src"])


if __name__ == "__main__":
    answers = [answer(job) for job in json.loads(Path(sys.argv[1]).read_text())]
    print(json.dumps(answers))
