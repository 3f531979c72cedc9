"""``litstarter lr-find``: Lightning's learning-rate range test (``Tuner.lr_find``) on the model and data a fit
would build, from the same ``--config`` stack and overrides.

    litstarter lr-find --config configs/default.yaml [--out runs/lr_find] [--min_lr 1e-6] [--max_lr 1] \\
        [--num_training 100] [--trainer.max_epochs=... and any other fit override]

It trains ``--num_training`` steps with the learning rate rising exponentially from ``--min_lr`` to
``--max_lr`` (weights are restored afterwards, nothing is kept), and writes to ``--out``: ``lr_find.png`` (loss
against learning rate, the suggestion marked) and ``lr_find.yaml``, a one-line config delta
(``model.optimizer.init_args.lr: <suggestion>``) to stack with ``--config``.

What the sweep cannot see: it sets *every* parameter group to the one swept rate, so ``model.backbone_lr_scale``
(and any per-group rate) is off during it; the suggestion is for the base (head) group, and the backbone then
gets its scale of it. It supports one optimiser. Lightning's finder saves the weights to
``.lr_find_<uuid>.ckpt`` under ``trainer.default_root_dir`` to restore them; here that is a temporary folder
outside the working directory, so even a killed sweep leaves nothing in it.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

from litstarter._engine.arguments import ArgumentParser
from litstarter._engine.atomic_io import atomic_write
from litstarter.errors import UsageError

CAVEAT = (
    "the sweep sets every parameter group to one learning rate (model.backbone_lr_scale is off during it) and"
    " supports one optimiser; the suggestion is for the base (head) group"
)

#: The fit parser's pointer for an unknown option, and what lr-find says instead.
FIT_HELP = "(litstarter fit --help lists them)"
OWN_HELP = (
    "(lr-find's own are --out, --min_lr, --max_lr and --num_training: litstarter lr-find --help; the fit's:"
    " litstarter fit --help)"
)


def parse_args(argv: list[str]):
    """lr-find's own options, and the rest for the fit config (``--config``, ``--key=value``)."""
    parser = ArgumentParser(
        prog="litstarter lr-find",
        description="Sweep the learning rate over a few training steps and suggest one (Lightning's Tuner.lr_find).",
        epilog="--config and other --key=value arguments build the model and data as `litstarter fit` would.",
    )
    parser.add_argument("--out", default="runs/lr_find", help="Folder for lr_find.png and lr_find.yaml.")
    parser.add_argument("--min_lr", type=float, default=1e-6, help="The sweep's first learning rate.")
    parser.add_argument("--max_lr", type=float, default=1.0, help="The sweep's last learning rate.")
    parser.add_argument("--num_training", type=int, default=100, help="Training steps in the sweep.")
    args, rest = parser.parse_known_args(argv)
    if not 0 < args.min_lr < args.max_lr or args.num_training < 2:
        raise UsageError(
            f"--min_lr and --max_lr must satisfy 0 < min_lr < max_lr and --num_training >= 2, got {args.min_lr},"
            f" {args.max_lr} and {args.num_training}"
        )
    if any(a.split("=", 1)[0] in ("--ckpt_path", "--print_config") for a in rest):
        raise UsageError("lr-find starts from the config's initial weights: --ckpt_path and --print_config don't apply")
    return args, rest


def sweep(fit_args: list[str], root_dir: str, min_lr: float, max_lr: float, num_training: int):
    """Build the fit's model, data and trainer (LightningCLI ``run=False``), then run ``Tuner.lr_find`` with the
    trainer's files under ``root_dir``."""
    from lightning.pytorch.tuner import Tuner

    from litstarter.cli import FIT_CLASSES, LitStarterCLI

    try:
        cli = LitStarterCLI(
            **FIT_CLASSES,
            run=False,
            save_config_callback=None,
            args=[*fit_args, f"--trainer.default_root_dir={root_dir}", "--trainer.logger=false"],
        )
    except UsageError as err:  # the fit's parser names only the fit's help, where lr-find's own options are not
        err.args = (str(err).replace(FIT_HELP, OWN_HELP),)
        raise
    if cli.model.hparams.get("backbone_lr_scale", 1.0) != 1.0:
        print(f"litstarter lr-find: note: model.backbone_lr_scale is {cli.model.hparams.backbone_lr_scale}; {CAVEAT}")
    finder = Tuner(cli.trainer).lr_find(
        cli.model,
        datamodule=cli.datamodule,
        min_lr=min_lr,
        max_lr=max_lr,
        num_training=num_training,
        update_attr=False,
    )
    return finder


def main(argv: list[str]) -> int:
    """Run ``litstarter lr-find``; return the exit code."""
    args, fit_args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="litstarter-lr-find-") as root_dir:  # .lr_find_<uuid>.ckpt goes here
        finder = sweep(fit_args, root_dir, args.min_lr, args.max_lr, args.num_training)
    suggestion = finder.suggestion() if finder is not None else None
    if suggestion is None or not math.isfinite(suggestion):
        raise UsageError(
            "lr-find: the loss curve gave no suggestion (too few steps or a diverging loss); raise --num_training"
            " or lower --max_lr"
        )
    out = Path(args.out)
    figure = finder.plot(suggest=True)
    png = atomic_write(out / "lr_find.png", lambda tmp: figure.savefig(tmp, format="png", dpi=120))
    delta = f"model.optimizer.init_args.lr: {suggestion:.3g}\n"
    yaml_path = atomic_write(out / "lr_find.yaml", lambda tmp: tmp.write_text(delta))
    print(f"suggested learning rate: {suggestion:.3g} (steepest fall of the loss) -> {png}")
    print(f"config delta: {yaml_path} ({delta.strip()}); stack it: --config {yaml_path}")
    print(f"note: {CAVEAT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
