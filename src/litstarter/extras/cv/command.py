"""``litstarter cv``: k-fold cross-validation over ``litstarter fit`` runs.

    litstarter cv --config configs/default.yaml --folds 5 [--seed N] [--refit] [--trainer.max_epochs=10 ...]

Everything that is not a cv option is handed to every fold's fit. The study lives in
``<save_dir>/<name>/cv-<k>/``: ``folds/fold_<i>.csv`` (each fold's split), ``fold_<i>/`` (an ordinary run),
``cv_metrics.json``, ``oof_predictions.csv`` and, with ``--refit``, ``refit/``. Running the same command again
skips the finished folds and continues a stopped one; another study of the same name and k (other data, config or
seed) goes to ``cv-<k>-v1``, ``cv-<k>-v2``, ... (:mod:`.study`), never into the first one's folder.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from litstarter._engine.arguments import ArgumentParser
from litstarter._engine.atomic_io import write_json
from litstarter.errors import UsageError
from litstarter.extras.cv.fold_run import PREDICTIONS, evaluate, finished, fit, read_predictions, run_fold
from litstarter.extras.cv.folds import assign_folds, copy_groups
from litstarter.extras.cv.pool import Pool, read_pool
from litstarter.extras.cv.report import METRICS_FILE, OOF_FILE, chosen_epochs, table, write_metrics, write_oof
from litstarter.extras.cv.study import claim_study, study_base
from litstarter.tasks.answers import answers_class

REFUSED = ("--ckpt_path", "--print_config")  # each fold resumes itself; a study is not a print


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """cv's own options, and the rest (passed to every fit as given)."""
    parser = ArgumentParser(
        prog="litstarter cv",
        description="k-fold cross-validation: every fold a `litstarter fit` in its own run directory.",
        epilog="Other --key=value arguments (e.g. --trainer.max_epochs=5) are passed on to every fold's fit.",
    )
    parser.add_argument("--config", action="append", default=[], help="A config file, as for fit (repeatable).")
    parser.add_argument("--folds", type=int, default=5, help="Number of folds, k (5).")
    parser.add_argument("--seed", type=int, default=None, help="Seed of the fold split; default: seed_everything.")
    parser.add_argument("--refit", action="store_true", help="Then train on all training data, test once.")
    args, rest = parser.parse_known_args(argv)
    if args.folds < 2:
        raise UsageError(f"--folds must be >= 2, got {args.folds}")
    for token in rest:
        if token.split("=", 1)[0] in REFUSED:
            raise UsageError(
                f"{token.split('=', 1)[0]} cannot be given to cv: each fold resumes from its own last.ckpt"
            )
    return args, rest


def resolved_config(fit_args: list[str]) -> dict[str, Any]:
    """The config ``fit`` would run with (``--print_config``, nothing trained)."""
    from litstarter.cli import main as cli_main

    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            cli_main([*fit_args, "--print_config"])
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            lines = [line.strip() for line in err.getvalue().splitlines() if line.strip()]
            raise UsageError(f"fit config: {lines[-1] if lines else 'rejected by fit'}") from None
    return yaml.safe_load(out.getvalue()) or {}


def refit_callbacks(config: dict[str, Any]) -> list:
    """The configured callbacks less those that watch a metric (early stopping, the best checkpoint): a refit
    has no validation to watch."""
    callbacks = (config.get("trainer") or {}).get("callbacks") or []
    return [c for c in callbacks if not (isinstance(c, dict) and (c.get("init_args") or {}).get("monitor"))]


def refit(study_dir: Path, pool: Pool, fit_args: list[str], config: dict, epochs: int, tags: dict) -> dict:
    """Train on the whole pool for ``epochs`` without validation, then evaluate once on the test split."""
    done = study_dir / "refit" / "cv_refit.json"
    if done.is_file():
        return json.loads(done.read_text())
    if not pool.test_ids:
        raise UsageError("--refit evaluates on the test split, and this data has none (data.test_fraction: 0?)")
    # The test images are the run's val split, never validated on during training (limit_val_batches: 0).
    split = pool.write_split(study_dir / "folds" / "refit.csv", ["train"] * len(pool.ids), with_test="val")
    overlay = study_dir / "refit.yaml"
    overlay.write_text(yaml.safe_dump({"trainer": {"callbacks": refit_callbacks(config)}}, sort_keys=False))
    args = [
        *fit_args[:1],
        *fit_args[1:],
        "--config",
        str(overlay),
        *pool.data_args(split),
        f"--trainer.max_epochs={epochs}",
        "--trainer.limit_val_batches=0",
        "--test_after_fit=false",
    ]
    run_dir = study_dir / "refit"
    if run_dir.exists():
        import shutil

        shutil.rmtree(run_dir)  # a refit killed part-way starts again (it is one fit, the folds are kept)
    cli = fit(args, run_dir, {**tags, "cv_fold": "refit"})
    figures, _ = evaluate(cli, None)
    record = {
        "epochs": epochs,
        "n_test": len(pool.test_ids),
        "metrics": {"test/" + k.split("/", 1)[1]: v for k, v in figures.items()},
    }
    write_json(done, record)
    return record


def fold_strata(pool) -> tuple[np.ndarray, list[str]]:
    """What the folds keep in proportion, by the targets' kind: ``(n,)`` one group per item (its class, its band of
    values) or ``(n, G)`` several (label sets), and each group's name for the messages."""
    strata = pool.kind.strata(pool.targets)
    names = pool.kind.strata_names(pool.class_names, pool.targets)
    return (strata.argmax(axis=1), names) if (strata.sum(axis=1) == 1).all() else (strata, names)


def main(argv: list[str]) -> int:
    """Run ``litstarter cv``; return the exit code."""
    args, overrides = parse_args(argv)
    fit_args = ["fit", *(a for c in args.config for a in ("--config", c)), *overrides]
    config = resolved_config(fit_args)
    seed = args.seed if args.seed is not None else config.get("seed_everything")
    seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else 0
    base = study_base(config, args.folds)  # checked before the data is read
    pool = read_pool(config)
    groups = copy_groups(pool.sha256, pool.phash)
    strata, strata_names = fold_strata(pool)
    folds = assign_folds(strata, groups, args.folds, seed, strata_names)
    merged = len(groups) - len(np.unique(groups))
    print(
        f"litstarter cv: {len(pool.ids)} training images, {args.folds} folds (seed {seed}); {merged} copies kept"
        f" with their originals; test split ({len(pool.test_ids)}) untouched",
        file=sys.stderr,
    )
    study = {"folds": args.folds, "seed": seed, "data": pool.digest(), "config": config}
    study_dir = claim_study(base, study)
    print(f"litstarter cv: study folder {study_dir}", file=sys.stderr)
    tags = {"cv_study": str(study_dir)}
    records = []
    for fold in range(args.folds):
        fold_dir = study_dir / f"fold_{fold + 1}"
        record = finished(fold_dir)
        if record is not None:
            print(f"litstarter cv: fold {fold + 1} finished earlier: skipped", file=sys.stderr)
        else:
            splits = ["val" if f == fold else "train" for f in folds]
            split = pool.write_split(study_dir / "folds" / f"fold_{fold + 1}.csv", splits)
            print(f"litstarter cv: fold {fold + 1}/{args.folds} in {fold_dir}", file=sys.stderr, flush=True)
            val_ids = [i for i, f in zip(pool.ids, folds, strict=True) if f == fold]
            fold_args = [*fit_args, *pool.data_args(split), "--test_after_fit=false"]
            record = run_fold(
                fold_args, fold_dir, fold + 1, val_ids, pool.id_column, {**tags, "cv_fold": str(fold + 1)}
            )
        records.append(record)
    predictions = {}
    for record in records:
        predictions |= read_predictions(study_dir / f"fold_{record['fold']}" / PREDICTIONS)
    answers = [answers_class(r["task"])(pool.class_names, r.get("answers_state")) for r in records]
    oof = write_oof(study_dir / OOF_FILE, pool, folds, predictions, answers)
    refit_record = refit(study_dir, pool, fit_args, config, chosen_epochs(records), tags) if args.refit else None
    summary = {"folds": args.folds, "seed": seed, "monitor": records[0].get("monitor")}
    result = write_metrics(study_dir / METRICS_FILE, summary, records, oof, refit_record)
    print(table(records, result["summary"], oof))
    if refit_record is not None:
        shown = ", ".join(f"{k} {v:.4f}" for k, v in refit_record["metrics"].items() if k.count("/") == 1)
        print(
            f"refit: {refit_record['epochs']} epochs on all {len(pool.ids)} training images; test split"
            f" ({refit_record['n_test']}): {shown}"
        )
    print(f"Study folder: {study_dir} ({METRICS_FILE}, {OOF_FILE}, fold_<i>/config.yaml)")
    return 0
