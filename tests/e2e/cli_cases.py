"""Run several ``litstarter`` command lines in ONE process, each as the console script would, and report each.

``python -m tests.e2e.cli_cases cases.json results.json``: ``cases.json`` is a list of ``{"argv": [...],
"env": {...}}``; each runs through ``litstarter.__main__.main`` (the entry point's own error handling) with its
stdout and stderr captured, an uncaught exception printed as Python would and counted as exit 1, ``SystemExit``
as its code. One interpreter start (torch + Lightning import) serves every case: the suite's budget.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import traceback


def run_case(argv: list[str], env: dict[str, str]) -> dict:
    """Run one command line; return its exit code, stdout and stderr."""
    saved = dict(os.environ)
    os.environ.update(env)
    logging.getLogger("litstarter").handlers.clear()  # re-attached to this case's stderr
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                from litstarter.__main__ import main

                code = main(argv)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {"argv": argv, "code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> None:
    """Read the cases, run them in order, write the results."""
    cases_path, results_path = sys.argv[1:3]
    with open(cases_path) as f:
        cases = json.load(f)
    results = [run_case(case["argv"], case.get("env", {})) for case in cases]
    with open(results_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
