"""``fit --resume auto`` and ``fit --resume <run dir>``: continue a run in its own folder, from a checkpoint file.

Every fit here claims a new ``version_<n>``, so Lightning's ``ckpt_path="last"`` would look in the new, empty
folder; and LightningCLI merges a checkpoint's model settings only when ``ckpt_path`` is a file (in the private
``_parse_ckpt_path``, right after parsing). So ``--resume`` becomes ``ckpt_path=<file>`` before that:

* ``auto``: of this experiment's runs (the first file logger's ``<save_dir>/<name>/``; only its ``version`` if that
  is set), the one whose checkpoint is the newest; with none, a fresh run, said in one line;
* a folder: that run.

A run's checkpoint is the newer (by mtime) of ``checkpoints/last.ckpt`` and the ``hpc_ckpt_<n>.ckpt`` files that
Lightning's SLURM requeue saves into ``default_root_dir`` (``scripts/slurm/train.sbatch`` makes that the run folder).
The config must agree with the run's own (``config.resume.yaml`` of its last resume, else ``config.yaml``) on all
that shapes the model, the data and the optimiser (:func:`differences`); Trainer settings may change, and the
resume line names them. The run is then held (:func:`.claim.hold_run`): a second fit into it is refused.

Under DDP global rank 0 decides: the processes Lightning's launcher re-runs inherit its choice
(:data:`.claim.RESUME_ENV`); ranks that another launcher started choose the same run by the same rule without
holding it, and take the folder from rank 0 when the run starts, as for a fresh run.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from litstarter.errors import UsageError

from .claim import (
    CLAIM_ENV,
    VERSION_PREFIX,
    global_rank_from_env,
    hand_on_resume,
    hold_run,
    inherited_resume,
    run_dir_logger,
)
from .tracking import flatten

log = logging.getLogger("litstarter")

AUTO = "auto"
#: A run's own settings, newest first.
RUN_CONFIGS = ("config.resume.yaml", "config.yaml")
#: Refused when they differ from the run's: what is learnt, from what, and how it is optimised.
SHAPING = ("model", "data", "seed_everything")
#: Under :data:`SHAPING`, but how the work is done, not what is learnt: these may change.
MAY_CHANGE = (
    "data.init_args.num_workers",
    "model.compile",
    "model.channels_last",
    "model.gradient_checkpointing",
    "model.tta",
)
#: Where the run writes: the resume sets it.
NOT_COMPARED = ("trainer.logger",)
_MISSING = object()


def _under(key: str, prefixes: tuple[str, ...]) -> bool:
    return any(key == p or key.startswith(p + ".") for p in prefixes)


@dataclass
class Resume:
    """The run a ``--resume`` continues.

    Args:
        run_dir: The run's folder.
        ckpt: The checkpoint it continues from.
        changed: ``key: the run's in the run, ours now`` for each Trainer setting that differs from the run's.
        position: ``(epoch, step)`` the checkpoint was saved at.
    """

    run_dir: Path
    ckpt: Path
    changed: list[str] = field(default_factory=list)
    position: tuple = (None, None)

    def line(self, mlflow_run_id: str | None = None) -> str:
        """The resume line: the run, the checkpoint and its position, the MLflow run, what changed."""
        where = os.path.relpath(self.ckpt, self.run_dir) if self.run_dir in self.ckpt.parents else str(self.ckpt)
        epoch, step = self.position
        text = f"--resume: continuing '{self.run_dir}' from {where} (epoch {epoch}, step {step}), in the same folder"
        if mlflow_run_id:
            text += f" and MLflow run {mlflow_run_id}"
        if self.changed:
            text += f"; changed since the run: {', '.join(self.changed)}"
        return text


def run_checkpoint(run_dir: Path) -> Path | None:
    """The newer (by mtime) of ``<run>/checkpoints/last.ckpt`` and ``<run>/hpc_ckpt_<n>.ckpt`` (``last.ckpt`` on a
    tie, as the SLURM script chooses), or None."""
    found = [
        p for p in (run_dir / "checkpoints" / "last.ckpt", *sorted(run_dir.glob("hpc_ckpt_*.ckpt"))) if p.is_file()
    ]
    return max(found, key=lambda p: p.stat().st_mtime_ns, default=None)


def experiment_root(config) -> tuple[Path, Path | None]:
    """``(<save_dir>/<name>, <save_dir>/<name>/<version> if the version is set)`` of the first file logger.

    Raises:
        UsageError: The first logger is no TensorBoardLogger or CSVLogger.
    """
    entry = run_dir_logger(config)
    if entry is None:
        raise UsageError(
            "--resume auto finds an experiment's runs by the first logger's save_dir and name, but trainer.logger has"
            " no TensorBoardLogger or CSVLogger first; give the run: --resume <save_dir>/<name>/<version>"
        )
    args = entry.init_args
    root = Path(args.get("save_dir") or ".") / (args.get("name") or "")
    version = args.get("version")
    if version is None:
        return root, None
    return root, root / (version if isinstance(version, str) else f"{VERSION_PREFIX}{version}")


def newest_run(root: Path) -> tuple[Path, Path] | None:
    """``(run folder, checkpoint)`` of the run under ``root`` whose checkpoint is the newest, or None."""
    runs = []
    for run in sorted(root.iterdir()) if root.is_dir() else []:
        ckpt = run_checkpoint(run) if run.is_dir() else None
        if ckpt is not None:
            runs.append((ckpt.stat().st_mtime_ns, run, ckpt))
    if not runs:
        return None
    _, run, ckpt = max(runs, key=lambda r: r[0])
    return run, ckpt


def choose_run(value: str, config) -> tuple[Path, Path] | None:
    """``(run folder, checkpoint)`` that ``--resume <value>`` continues; None: start a fresh run.

    Raises:
        UsageError: A folder that is not one, or holds no checkpoint.
    """
    inherited = inherited_resume()
    if inherited is not None:
        return inherited
    if value != AUTO:
        run = Path(value)
        if not run.is_dir():
            raise UsageError(
                f"--resume '{value}' is not a run folder; give auto, or a run such as runs/digits/version_0"
            )
        ckpt = run_checkpoint(run)
        if ckpt is None:
            raise UsageError(
                f"--resume '{value}' holds nothing to resume from (no checkpoints/last.ckpt, no hpc_ckpt_<n>.ckpt)"
            )
        return run, ckpt
    root, fixed = experiment_root(config)
    claimed = os.environ.get(CLAIM_ENV)
    if claimed and Path(claimed).parent.resolve() == root.resolve():
        return None  # a re-run (another device) of a process that started this experiment's run fresh
    if fixed is not None:
        ckpt = run_checkpoint(fixed)
        found = (fixed, ckpt) if ckpt is not None else None
    else:
        found = newest_run(root)
    if found is None:
        log.warning(
            f"--resume auto: no run in '{fixed or root}' has a checkpoint (checkpoints/last.ckpt or"
            " hpc_ckpt_<n>.ckpt): starting a fresh run"
        )
    return found


def _described(key: str, before, now) -> str:
    """``key: <before> in the run, <now> now``; ``key (changed)`` where a value is too long for one line."""
    before, now = (repr(None if v is _MISSING else v) for v in (before, now))
    return f"{key}: {before} in the run, {now} now" if max(len(before), len(now)) <= 40 else f"{key} (changed)"


def _short(key: str) -> str:
    """``model.init_args.backbone`` as a user types it, ``model.backbone`` (the task is ``model.class_path``)."""
    return "model." + key.removeprefix("model.init_args.") if key.startswith("model.init_args.") else key


def differences(ours: dict, theirs: dict) -> tuple[list[str], list[str]]:
    """``(shaping, trainer)``: ``key: the run's -> ours`` for each setting under :data:`SHAPING` (less
    :data:`MAY_CHANGE`) and under ``trainer`` that differs between two dumped configs."""
    a, b = ({_short(k): v for k, v in flatten(config).items()} for config in (ours, theirs))
    if a.get("seed_everything") is True:  # a random seed: the run recorded the one it drew
        a.pop("seed_everything")
        b.pop("seed_everything", None)
    differ = [
        k for k in sorted(set(a) | set(b)) if a.get(k, _MISSING) != b.get(k, _MISSING) and not _under(k, NOT_COMPARED)
    ]
    shown = {k: _described(k, b.get(k, _MISSING), a.get(k, _MISSING)) for k in differ}
    shaping = [shown[k] for k in differ if _under(k, SHAPING) and not _under(k, MAY_CHANGE)]
    return shaping, [shown[k] for k in differ if _under(k, ("trainer",))]


def run_settings(run_dir: Path) -> tuple[Path, dict] | None:
    """``(file, settings)`` of the run's newest saved config (:data:`RUN_CONFIGS`), or None."""
    for name in RUN_CONFIGS:
        path = run_dir / name
        if path.is_file():
            return path, yaml.safe_load(path.read_text()) or {}
    return None


def resolve_resume(subcommand: str, given, dumped: dict) -> Resume | None:
    """Turn ``--resume`` into a checkpoint file in ``given.ckpt_path``, after checking the run agrees and holding it.

    Args:
        subcommand: ``fit``, ``validate``, ...
        given: The subcommand's parsed config (a jsonargparse Namespace, before the checkpoint's settings merge).
        dumped: The same config as plain values (``parser.dump``), to compare with the run's ``config.yaml``.

    Raises:
        UsageError: ``--resume`` outside fit or beside ``--ckpt_path``; a setting that shapes the model, the data or
            the optimiser differs from the run's (naming each); the run is held by another fit.
    """
    value = given.get("resume")
    if not value:
        return None
    if subcommand != "fit":
        raise UsageError(f"--resume is for fit; to {subcommand} a run, pass --ckpt_path <run>/checkpoints/last.ckpt")
    if given.get("ckpt_path"):
        raise UsageError("--resume and --ckpt_path both say what to resume from: give one of them")
    chosen = choose_run(str(value), given)
    if chosen is None:
        given.resume = None  # the fresh run's config.yaml reruns it; it does not resume
        return None
    resume = Resume(*chosen)
    settings = run_settings(resume.run_dir)
    if settings is not None:
        shaping, resume.changed = differences(dumped, settings[1])
        if shaping:
            raise UsageError(
                f"--resume '{resume.run_dir}': your config differs from the run's ({settings[0].name}) in what shapes"
                f" the model, the data or the optimiser: {'; '.join(shaping)}. A resume continues the run's model and"
                " optimiser state: drop the change, or start a new run without --resume (--model.init_from"
                f" {resume.ckpt} starts it from these weights)"
            )
    if global_rank_from_env() in (None, 0) and inherited_resume() is None:
        hold_run(resume.run_dir)  # refused here, naming the holder, if another fit has it
        hand_on_resume(resume.run_dir, resume.ckpt)
    given.ckpt_path = str(resume.ckpt)
    return resume
