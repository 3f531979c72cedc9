"""``litstarter`` / ``python -m litstarter`` entry point.

``litstarter``, ``litstarter --help`` and a mistyped subcommand answer from the two static tables below, without
importing torch or Lightning (``import lightning.pytorch`` alone takes seconds). Subcommands that don't train are
dispatched before anything imports Lightning, so that they start fast and (for ``infer`` on an ``.onnx`` model)
run on a box with only onnxruntime, numpy and Pillow. Everything else goes to LightningCLI.

To add a subcommand, add one line to :data:`LIGHT_COMMANDS`; the top-level help is built from it.
"""

from __future__ import annotations

import os
import sys

from litstarter._engine.errors import USAGE, run_reporting

# Subcommands that skip LightningCLI: name -> ("module:function", one-line help). The function takes the
# remaining argv and returns an exit code; its module is imported only when the subcommand runs.
# (A bare "module:function" string works too, listed without a help line.)
LIGHT_COMMANDS: dict[str, tuple[str, str] | str] = {
    "doctor": (
        "litstarter.extras.doctor.command:main",
        "verify the install: versions, accelerator, a real computation per device",
    ),
    "export": (
        "litstarter.extras.deploy.export:main",
        "export a checkpoint to weights.pt, TorchScript, torch.export, ONNX and INT8 ONNX, each verified",
    ),
    "infer": (
        "litstarter.extras.deploy.infer:main",
        "classify image files with a checkpoint or any exported model, to a CSV",
    ),
    "inspect": (
        "litstarter.extras.inspect.command:main",
        "report an image folder: classes, splits, sizes, bad files, leaks",
    ),
    "serve": (
        "litstarter.extras.serve.command:main",
        "answer HTTP requests with a checkpoint or any exported model, batching them on the server",
    ),
    # tune drives many fits itself (it imports Lightning when it runs), so it too skips LightningCLI's parser.
    "tune": (
        "litstarter.extras.tune:main",
        "search hyperparameters with Optuna; each trial is a fit in its own folder",
    ),
}
# A training-only project deletes deploy/ (the whole deployment pipeline): its subcommands go with it.
if not os.path.isfile(os.path.join(os.path.dirname(__file__), "extras", "deploy", "__init__.py")):
    LIGHT_COMMANDS = {name: entry for name, entry in LIGHT_COMMANDS.items() if ".deploy." not in str(entry)}

# LightningCLI's subcommands (``LightningCLI.subcommands()``; a test keeps the two equal), with our help lines.
LIGHTNING_COMMANDS: dict[str, str] = {
    "fit": "train a model (then test its best checkpoint unless --test_after_fit false)",
    "validate": "run one evaluation epoch on the validation split",
    "test": "run one evaluation epoch on the test split",
    "predict": "run inference on the predict split",
}

USAGE_LINE = "usage: litstarter <subcommand> [options]   (litstarter <subcommand> --help for its options)"


def light_target(name: str) -> str:
    """The ``module:function`` a light subcommand runs."""
    entry = LIGHT_COMMANDS[name]
    return entry if isinstance(entry, str) else entry[0]


def light_help(name: str) -> str:
    """A light subcommand's one-line help ('' when its table entry has none)."""
    entry = LIGHT_COMMANDS[name]
    return "" if isinstance(entry, str) else entry[1]


def top_level_help() -> str:
    """The top-level help, built from the two tables: no parser is built and nothing heavy is imported."""
    rows = [*LIGHTNING_COMMANDS.items(), *((name, light_help(name)) for name in LIGHT_COMMANDS)]
    width = max(len(name) for name, _ in rows) + 2
    lines = [USAGE_LINE, "", "subcommands:"]
    lines += [f"  {name.ljust(width)}{text}".rstrip() for name, text in rows]
    lines += ["", "Start with: litstarter fit --config configs/default.yaml"]
    return "\n".join(lines)


def unknown_subcommand(word: str) -> int:
    """Say that ``word`` is no subcommand (with the nearest one, if any), in one line; return the usage exit code."""
    import difflib

    known = [*LIGHTNING_COMMANDS, *LIGHT_COMMANDS]
    close = difflib.get_close_matches(word, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    print(USAGE_LINE, file=sys.stderr)
    print(f"litstarter: error: unknown subcommand '{word}'{hint} (choose from {', '.join(known)})", file=sys.stderr)
    return USAGE


def main(argv: list[str] | None = None) -> int:
    """Answer help and typos statically, dispatch a light subcommand, or hand over to LightningCLI."""
    from_sys_argv = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(top_level_help())
        return 0 if argv else USAGE
    if argv[0] in LIGHT_COMMANDS:
        import importlib

        module_name, func_name = light_target(argv[0]).split(":")
        func = getattr(importlib.import_module(module_name), func_name)
        return run_reporting(argv[0], lambda: func(argv[1:]))
    if argv[0] not in LIGHTNING_COMMANDS and not argv[0].startswith("-"):
        return unknown_subcommand(argv[0])

    from litstarter.cli import main as cli_main

    subcommand = argv[0] if not argv[0].startswith("-") else "fit"

    def run_cli() -> int:
        cli_main(None if from_sys_argv else argv)  # None: LightningCLI reads sys.argv itself
        return 0

    return run_reporting(subcommand, run_cli)


if __name__ == "__main__":
    sys.exit(main())
