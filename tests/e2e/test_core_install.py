"""A core-only install trains: in one process whose extras' packages are hidden (as if never installed), the digits
default and an image folder fit, the help lists only what can run, and an extra's subcommand says which extra to
install, in one line.

The packages are hidden by ``sys.modules[name] = None`` before anything imports: ``import`` then fails and
``importlib.util.find_spec`` finds nothing, as in a venv without them (a meta-path finder that raises would break
torch, which probes ``find_spec("onnx")``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from litstarter.__main__ import LIBRARY_COMMANDS, extra_commands
from tests.helpers import DEFAULT_CONFIG, FOLDER_CONFIG, REPO, make_image_folder

#: What the extras (and the trackers kept as extras) install beyond training's dependencies.
#: The extras' subcommands that cannot start without their packages.
NEEDING = {name: command for name, command in extra_commands().items() if command.needs}
EXTRA_PACKAGES = sorted(
    {p for c in extra_commands().values() for p in c.needs} | {"onnxruntime", "mlflow", "psycopg", "timm"}
)

PROBE = textwrap.dedent(
    """
    import sys
    for name in {hidden!r}:
        sys.modules[name] = None
    import contextlib, io, json
    from litstarter.__main__ import main, top_level_help
    results = {{"help": top_level_help()}}
    for label, argv in {runs!r}.items():
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(argv)
        results[label] = {{"code": code, "stderr": err.getvalue()}}
    results["loaded"] = sorted(n for n in sys.modules if n.split(".")[0] in {hidden!r} and sys.modules[n] is not None)
    print(json.dumps(results))
    """
)


def test_with_every_extras_package_hidden_training_runs_and_extras_say_what_to_install(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "photos", {"cat": 6, "dog": 6}, size=(20, 20))
    onnx = tmp_path / "model.onnx"
    onnx.write_bytes(b"not read: onnxruntime is missing")
    short = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2", "--trainer.limit_val_batches=1"]
    short += ["--data.init_args.num_workers=0", f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}"]
    runs = {
        "digits": ["fit", "--config", str(DEFAULT_CONFIG), *short],
        "folder": ["fit", "--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), f"--data.root={root}",
                   "--data.image_size=16", f"--data.cache_dir={tmp_path / 'cache'}", *short],
        "timm": ["fit", "--config", str(DEFAULT_CONFIG), "--model.backbone=timm/resnet18", *short],
        **{name: [name, "--help"] for name, command in NEEDING.items()},
    }  # fmt: skip
    if "infer" in extra_commands():
        runs["infer_onnx"] = ["infer", "--model", str(onnx), "--input", str(root), "--output", str(tmp_path / "p.csv")]
    code = PROBE.format(hidden=EXTRA_PACKAGES, runs=runs)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])

    for fit in ("digits", "folder"):
        assert results[fit]["code"] == 0, results[fit]["stderr"][-3000:]
    assert (tmp_path / "runs" / "digits" / "version_0" / "metrics.json").is_file()
    assert (tmp_path / "runs" / "image_folder" / "version_0" / "metrics.json").is_file()
    assert results["loaded"] == []  # nothing of an extra was imported by training
    timm = results["timm"]["stderr"].strip().splitlines()[-1]  # a timm backbone names the extra to install
    assert results["timm"]["code"] == 2 and timm.endswith(
        "needs timm, which is not installed: pip install 'litstarter[timm]'"
    ), results["timm"]["stderr"][-2000:]

    listed = {line.split()[0] for line in results["help"].split("subcommands:")[1].splitlines() if line[:2] == "  "}
    ready = {name for name, command in extra_commands().items() if not command.needs}
    assert {"fit", "validate", "test", "predict", *LIBRARY_COMMANDS, *ready} == listed
    for name, command in NEEDING.items():
        err = results[name]["stderr"].strip()
        assert results[name]["code"] == 2 and "\n" not in err, err
        assert err.startswith(f"litstarter {name}: error: {name} needs ")
        assert err.endswith(f"pip install -e '.[{command.extra}]'") and command.extra in results["help"]
    if "infer_onnx" in results:  # infer runs checkpoints without its extra's packages, but not ONNX
        err = results["infer_onnx"]["stderr"].strip()
        assert results["infer_onnx"]["code"] == 2 and "needs onnxruntime" in err and "\n" not in err, err
