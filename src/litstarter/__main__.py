"""``litstarter`` / ``python -m litstarter`` entry point.

Subcommands that don't train are dispatched *before* anything imports Lightning, so that they start fast
and (for ``infer`` on an ``.onnx`` model) run on a box with only onnxruntime, numpy and Pillow.
"""

from __future__ import annotations

import sys

from litstarter.errors import run_reporting

# Light subcommands: name -> "module:function"; each function takes argv and returns an exit code.
LIGHT_COMMANDS: dict[str, str] = {
    "doctor": "litstarter.doctor:main",
    "export": "litstarter.deploy.export:main",
    "infer": "litstarter.deploy.infer:main",
}

LIGHT_HELP = """more subcommands (each has --help):
  doctor    verify the install: versions, accelerator, a real computation per device
  export    export a checkpoint to weights.pt, TorchScript, torch.export, ONNX and INT8 ONNX, each verified
  infer     classify image files with a checkpoint or any exported model, to a CSV
"""


def main(argv: list[str] | None = None) -> int:
    """Dispatch a light subcommand, or hand over to LightningCLI."""
    from_sys_argv = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in LIGHT_COMMANDS:
        import importlib

        module_name, func_name = LIGHT_COMMANDS[argv[0]].split(":")
        func = getattr(importlib.import_module(module_name), func_name)
        return run_reporting(argv[0], lambda: func(argv[1:]))

    if not argv or argv[0] in ("-h", "--help"):
        print(LIGHT_HELP)  # LightningCLI's own help below lists fit/validate/test/predict only
    from litstarter.cli import main as cli_main

    subcommand = argv[0] if argv and not argv[0].startswith("-") else "fit"

    def run_cli() -> int:
        cli_main(None if from_sys_argv else argv)  # None: LightningCLI reads sys.argv itself
        return 0

    return run_reporting(subcommand, run_cli)


if __name__ == "__main__":
    sys.exit(main())
