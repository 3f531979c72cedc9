"""Every script in benchmarks/ runs: its ``--smoke`` (tiny sizes, seconds, the same code end to end) in a subprocess on
this venv's Python, the table it prints checked row by row, so that a refactor that breaks a benchmark fails here and
not on the day someone wants its figures again.

* The scripts are found by glob. One that is neither in :data:`SMOKES` nor a part of another benchmark (:data:`PARTS`,
  whose docstring says whose part it is and that it has no smoke of its own) fails
  :func:`test_every_script_has_a_smoke_mode_or_says_whose_part_it_is`.
* A benchmark that compares against a peer outside this venv (torchgeo, LitServe, torchvision's reference checkout,
  Ultralytics) skips where the peer is not there: its smoke says so in one line and exits 0, and the test reports
  that line as its skip reason. Nothing is downloaded. ``$TORCHGEO_PYTHON``, ``$LITSERVE_PYTHON`` and
  ``$TORCHVISION_CHECKOUT`` give the peers (each script's docstring makes its own); Ultralytics is
  ``.peers/ultralytics`` (``make peers``) or ``$ULTRALYTICS_PYTHON``, fastai ``.peers/fastai`` or ``$FASTAI_PYTHON``.
* The GPU check's smoke (its dry run) runs in tests/benchmarks/test_gpu_check.py, through scripts/gpu_check.sh as the
  GPU machine runs it.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO

BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py"))
N = r"-?(?:\d+(?:\.\d+)?|nan)"  # a printed figure
X = rf"{N}x"  # a printed ratio


@dataclass(frozen=True)
class Smoke:
    """What a benchmark's ``--smoke`` prints.

    Args:
        lines: Regular expressions, each matching a whole line of its standard output (in any order).
        peer: It compares against a peer outside this venv, and skips in one line without it.
        elsewhere: The test file that runs its smoke instead of :func:`test_smoke`.
    """

    lines: tuple[str, ...] = ()
    peer: bool = False
    elsewhere: str | None = None


def _startup_row(name: str, target: bool = True) -> str:
    verdict = rf"  target < {N}: (met|NOT met)" if target else ""
    return rf"  {re.escape(name)} +{N}{verdict}   \[{N}\]"


#: Every benchmark with the lines its smoke prints (its table's header and rows, its verdicts).
SMOKES: dict[str, Smoke] = {
    "box_formats.py": Smoke(
        (
            rf"box formats: 40 images of 160x120 px \(jpg\), \d+ boxes; cache build \(image_size 224, 1 process\(es\)\)"
            rf" {N} s, median of 1 round\(s\)",
            r"format +read s +/ build",
            *(rf"{form} +{N} +{N}%" for form in ("coco", "yolo", "boxes")),
            *(
                rf"{form} +{N} +{N}%  target < 5%: (met|NOT met)"
                for form in ("voc", "voc_devkit", "tf_csv", "labelme", "cvat", "label_studio", "label_studio_min")
            ),
            rf"slowest new reader: {N}% of the cache build \(target < 5%\): (met|NOT met)",
        )
    ),
    "classification_peer_fastai.py": Smoke(
        (
            r"ours vs fastai: 1 epochs, image_size auto, 1 round\(s\), seeds from 42; fastai lr default; .*",
            r"set +round +side +accuracy +macro-F1 +seconds +epochs",
            *(rf"tiny +1 +{side} +{N} +{N} +{N} +1" for side in ("ours", "fastai")),
            r"set +side +median acc +median F1 +median s",
            *(rf"tiny +{side} +{N} +{N} +{N}" for side in ("ours", "fastai")),
            rf"tiny +target: accuracy {N} vs {N}, time {X}: (met|NOT met)",
            rf"ours: infer's predictions against the fit's own test/acc: largest difference {N}",
            r"written to TORCH_HOME / FASTAI_HOME \(downloads\): nothing",
            r"ours median >= peer median, at <= 1\.1x its time: (met|NOT met)",
        ),
        peer=True,
    ),
    "cv_overhead.py": Smoke(
        (
            rf"cv: 2 folds in one process: {N} s wall, {N} s CPU",
            *(rf"fit {k}: {N} s wall, {N} s CPU, best val/f1_macro {N} \(same as the fold: {N}\)" for k in (1, 2)),
            rf"plain: 2 fits one after another: {N} s wall, {N} s CPU",
            rf"ratio cv / plain = {N} wall \(target <= 1.10\), {N} CPU",
        )
    ),
    "data_pipeline.py": Smoke(
        (
            r"pipeline +images/s",
            rf"cached uint8 memmap \+ tensor augment +{N}",
            rf"ImageFolder \+ PIL decode \+ augment +{N}",
            rf"cached uint8 memmap \+ v2.RandAugment +{N}",
            rf"ratio cached / per-item decoding: {X}  \(workers=1, target >= 5x\)",
            rf"ratio cached \+ RandAugment / per-item decoding: {X}; the fast default augmentation is {X} the stock .*",
            rf"cache build: {N} s; reuse with nothing changed: {N} s, of which the cache checks .* took {N} ms .*",
            rf"perceptual hash: {N} us a file .* against {N} ms to decode it .*",
        )
    ),
    "defaults.py": Smoke(
        (
            r"built \d+ sets: digits28, .*tiny.*",
            r"defaults suite \(defaults: --trainer.max_epochs=1\): test accuracy / macro-F1; .*",
            r"set +acc +f1 +ep +wall s +img/s +logreg +svc +vs best",
            rf"tiny +{N} +{N} +1 +{N} +(-|{N}) +{N}/{N} +{N}/{N} +[+-]{N}",
            r"defaults suite, detection \(defaults: --trainer.max_epochs=1\): test/map / test/map50 on the test .*",
            rf"colour +40 +{N} +{N} +1 +{N} +(-|{N})",
            r"defaults suite, segmentation \(defaults: --trainer.max_epochs=1\): test/miou / test/dice on the .*",
            rf"colour +40 +{N} +{N} +1 +{N} +(-|{N})",
        )
    ),
    "deploy_inference.py": Smoke(
        (
            r"CPU int8 support: .*; torch .*, 1 thread\(s\)",
            r"ONNX Runtime session: graph optimisation \w+, execution mode \w+",
            rf"small_cnn \({N} M parameters\) at \d+x\d+ px, 3 channels",
            r"runtime +batch 1 ms +x eager +batch 64 img/s +x eager",
            *(
                rf"{re.escape(name)} +{N} +{N} +{N} +{N}"
                for name in ("eager", "eager + inference_mode", "TorchScript", "pt2 (torch.export)", "ORT fp32")
            ),
            rf"ORT int8 +{N} +{N} +{N} +{N}",
            rf"ORT fp32 latency at batch 1: {X} eager \(target <= 0.4x\): (met|NOT met)",
            rf"ORT int8 throughput at batch 64: {X} ORT fp32 \(target >= 2x\): .*",
            rf"INT8 \(static_qdq, .*\) accuracy on \d+ test images: {N} vs eager {N}, drop {N} points .*",
        )
    ),
    "detection_peer.py": Smoke(
        (
            r"torchvision references/detection at .*; 120 canvases .*",
            r"medians over 1 round\(s\)",
            r"side +mAP +mAP50 +seconds",
            *(rf"{side} +{N} +{N} +{N}" for side in ("ours", "torchvision")),
            r"target: ours mAP >= torchvision's \((met|MISSED)\), time <= 1.1x torchvision's .*",
        ),
        peer=True,
    ),
    "detection_peer_ultralytics.py": Smoke(
        (
            r"ultralytics [\d.]+ \(torch .*\) at .*; sets colour, 1 round\(s\), 40 canvases, 1 epochs, batch 16, .*",
            r"set +round +side +mAP50-95 +mAP50 +seconds",
            *(rf"colour +1 +{side} +{N} +{N} +{N}" for side in ("ours", "ultralytics")),
            r"medians over 1 round\(s\)",
            *(rf"colour +- +{side} +{N} +{N} +{N}" for side in ("ours", "ultralytics")),
            rf"colour: ours median >= peer median on both metrics, at <= 1.1x its time: (met|NOT met) "
            rf"\(mAP50-95 {N} vs {N}, mAP50 {N} vs {N}, time {X}\)",
        ),
        peer=True,
    ),
    "first_run.py": Smoke(
        (
            r"100 images, 64 px, 10 classes, 1 epochs of the image-folder default",
            *(
                rf"  {re.escape(n)} +{N} train images/s   val/acc {N}   {N} M parameters"
                for n in ("new (stem)", "old (no stem)")
            ),
            rf"ratio new / old images/s: {X}  \(target >= 4x\)",
            rf"val/acc new - old: [+-]{N}  \((no worse|WORSE); target: new no worse\)",
        )
    ),
    "gpu_check.py": Smoke(elsewhere="tests/benchmarks/test_gpu_check.py"),
    "inspect_checks.py": Smoke(
        (
            r"image_size 16 \(cached at 18x18\):",
            rf"  near-duplicates within \d+ bits: png {N}%, jpeg75 {N}%, resize80 {N}%, crop5 {N}%; of 190 pairs .*",
            r"  quality checks, flagged crops / planted found of 10: dark \d+ / \d+, bright \d+ / \d+, .*",
        )
    ),
    "multilabel.py": Smoke(
        (
            r"multilabel, 100 composites \(seed 0, skew 0.75\), --trainer.max_epochs=1:",
            rf"  test map_macro {N}  \(target >= 0.90\)",
            rf"  test auroc_macro {N}",
            *(
                rf"  test {key} {N} at the tuned thresholds, {N} at 0.5"
                for key in ("f1_macro", "subset_acc", "hamming")
            ),
            rf"  1 epochs, fit \+ test {N} min",
        )
    ),
    "overhead.py": Smoke(
        (
            rf"repeat 1: median step wall/CPU ms: hand {N}/{N}, template {N}/{N}, stock {N}/{N}, quiet {N}/{N}; "
            rf"our hooks {N} ms",
            rf"  CPU, step / step without our hooks: median {N} \(target <= 1.03\), spread {N}-{N}; per repeat {N}",
            r"template / stock, fit against fit .*",
            r"Lightning \(template\) / hand-written, for information",
            r"logging \+ progress bar on / off, for information",
            rf"  wall: median {N}, spread {N}-{N}; per repeat {N}",
        )
    ),
    "recipes.py": Smoke(
        (
            r"100 images, 64 px, 10 classes, 1 epochs of the image-folder default, 1 round\(s\) of the 3 in turn",
            *(
                rf"  {re.escape(name)} +{N} images/s \(wall\) +{N} images/CPU-s   test macro-F1 {N}"
                for name in ("plain", "+ EMA", "+ MixUp/CutMix")
            ),
            *(
                rf"      its own work: {N}% of the steps' CPU by round \(target <= {t}%: (ok|OVER)\); .*"
                for t in (3, 5)
            ),
        )
    ),
    "segmentation_loader.py": Smoke(
        (
            r"loader +images/s",
            rf"cached uint8 memmaps \+ batched image/mask augment +{N}",
            rf"PIL decode of image and mask \+ v2 per item +{N}",
            rf"ratio cached / per-item: {X} \(workers=1, target >= 3x\)",
        )
    ),
    "segmentation_peer.py": Smoke(
        (
            r"150 canvases, 1 epochs, batch 32, workers \d+",
            r"round +ours mIoU +ours s +tg mIoU +tg micro +tg s +ours/tg s",
            rf"1 +{N} +{N} +{N} +{N} +{N} +{N}",
            rf"median +{N} +{N} +{N} +{N} +{N} +{N}",
            r"target: ours mIoU >= torchgeo's \((met|MISSED)\), time <= 1.1x torchgeo's .*",
        ),
        peer=True,
    ),
    "serve.py": Smoke(
        (
            r" +route +concurrency +max_batch_size +req/s +p50 ms +p99 ms +mean batch +client CPU",
            *(rf" +/predict +{c} +{b} +{N} +{N} +{N} +{N} +{N}%" for c in (1, 4) for b in (32, 1)),
            rf"/v2 infer +4 +32 +{N} +{N} +{N} +{N} +{N}%",
            rf"round 1: the model alone \(no HTTP\) {N} ms/image at batch 1, .* at batch 32 .*",
            rf"concurrency 4, batching \(median of rounds\): the server's requests/s are {X} the model alone's .*",
            rf"concurrency 4: batching gives {X} the requests/s of no batching \(for information\)",
            rf"concurrency 1: batching's p50 is {X} no batching's \(target <= 1.3\)",
            rf"protocol route, tritonclient at concurrency 4 \(UINT8 tensors, binary\): {N} req/s, .*",
        )
    ),
    "serve_peers.py": Smoke(
        (
            r"c=4, 20 requests a cell, median of 1 round\(s\)",
            r"body  server +req/s +p50 ms +p99 ms  p99 peer/ours +ours/peer req/s",
            *(rf"{kind} +ours +{N} +{N} +{N}  {X} +{X} \({N}\)" for kind in ("jpeg", "json")),
            *(rf"{kind} +litserve +{N} +{N} +{N}" for kind in ("jpeg", "json")),
            rf"v2 +ours +{N} +{N} +{N}",
            r"v2 +litserve +\(no route for this body\)",
        ),
        peer=True,
    ),
    "startup.py": Smoke(
        (
            r"median of 1 runs each \(seconds\); every run: see the lists",
            _startup_row("import lightning.pytorch", target=False),
            _startup_row("litstarter --help"),
            _startup_row("litstarter fti (typo)"),
            _startup_row("litstarter infer --help"),
            _startup_row("litstarter fit --help"),
            _startup_row("fit, config error at parse time"),
        )
    ),
    "streaming.py": Smoke(
        (
            r"pipeline +images/s",
            rf"cache: uint8 memmap \+ batched augment +{N}",
            rf"shards: local LitData \+ batched augment +{N}",
            rf"per-item: PIL decode \+ resize \+ augment +{N}",
            rf"encoded shards: LitData \+ decode \+ augment +{N}  \(no target\)",
            rf"ratio shards / cache: {X} \(target >= 0.7x\); shards / per-item: {X} \(target >= 3x\); workers=1",
            rf"cache build: {N} s; conversion to shards \(from the built cache\): {N} s .*; --encoded: {N} s",
            rf"on disk: jpegs {N} MiB, cache {N} MiB, shards {N} MiB, encoded {N} MiB",
        )
    ),
    "thin_structures.py": Smoke(
        (
            r"thin structures: 8 images of 96 px \(test 2\), curves 1-3 px; tiles of 48 px; IoU on the test files' .*",
            r"side +thin IoU +bg IoU +mIoU +seconds +fit test/miou",
            rf"otsu +{N} +{N} +{N} +{N} +-",
            *(rf"{side} +{N} +{N} +{N} +{N} +{N}" for side in ("defaults", "shrunk")),
            r"defaults beat otsu on the thin IoU and the mIoU: (yes|NO)",
            rf"defaults - shrunk: thin IoU [+-]?{N}, mIoU [+-]?{N}, time {X}",
        )
    ),
    "tune_overhead.py": Smoke(
        (
            rf"tune: 2 trials in one process: {N} s",
            *(rf"fit {k}: {N} s, best val/acc {N} \(same as trial: {N}\)" for k in (0, 1)),
            rf"plain: 2 fits one after another: {N} s",
            rf"ratio tune / plain = {N} \(target <= 1.10\)",
        )
    ),
}

#: Modules that are parts of a benchmark, not benchmarks: imported or run by it, with no smoke of their own (their
#: docstring says so); the benchmark's smoke runs them.
PARTS = {
    "classification_peer_fastai_driver.py": "classification_peer_fastai.py",
    "defaults_sets.py": "defaults.py",
    "detection_peer_torchvision.py": "detection_peer.py",
    "detection_peer_ultralytics_driver.py": "detection_peer_ultralytics.py",
    "detection_sets.py": "detection_peer_ultralytics.py",
    "gpu_check_device.py": "gpu_check.py",
    "gpu_check_fit.py": "gpu_check.py",
    "gpu_check_report.py": "gpu_check.py",
    "gpu_check_sections.py": "gpu_check.py",
    "segmentation_peer_torchgeo.py": "segmentation_peer.py",
    "serve_peer_litserve.py": "serve_peers.py",
}
RUNNABLE = [name for name in SCRIPTS if name not in PARTS and not (SMOKES.get(name) or Smoke()).elsewhere]


def _docstring(name: str) -> str:
    return ast.get_docstring(ast.parse((BENCHMARKS / name).read_text())) or ""


def _has_smoke_flag(name: str) -> bool:
    """Whether the script declares ``--smoke`` (an ``add_argument("--smoke", ...)`` call)."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_argument"
        and any(isinstance(arg, ast.Constant) and arg.value == "--smoke" for arg in node.args)
        for node in ast.walk(ast.parse((BENCHMARKS / name).read_text()))
    )


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_has_a_smoke_mode_or_says_whose_part_it_is(name: str) -> None:
    if name in PARTS:
        doc, owner = _docstring(name), PARTS[name]
        assert f"benchmarks/{owner}" in doc and "no smoke of its own" in doc, (
            f"benchmarks/{name} is a part of {owner}: its docstring must name benchmarks/{owner} and say it has "
            "'no smoke of its own'"
        )
        assert owner in SMOKES and (BENCHMARKS / owner).is_file()
        return
    assert name in SMOKES, (
        f"benchmarks/{name} has no smoke: give it --smoke (tiny sizes, seconds, the same code, the same table) and "
        f"list what it prints in tests/benchmarks/test_smoke.py's SMOKES (or, if it is another script's part, in PARTS)"
    )
    assert _has_smoke_flag(name), f"benchmarks/{name} has no --smoke argument"
    assert "--smoke" in _docstring(name), f"benchmarks/{name}'s docstring does not say what --smoke does"
    elsewhere = SMOKES[name].elsewhere
    if elsewhere:
        assert '"--smoke"' in (REPO / elsewhere).read_text(), f"{elsewhere} does not run {name}'s --smoke"


def _run_smoke(name: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / name), "--smoke"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNNABLE)
def test_smoke(name: str, tmp_path: Path) -> None:
    smoke = SMOKES.get(name)
    assert smoke is not None, f"benchmarks/{name} has no entry in SMOKES (see the test above)"
    proc = _run_smoke(name, {**os.environ, "PYTHONUNBUFFERED": "1"}, tmp_path)
    output = f"{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}"
    assert proc.returncode == 0, f"benchmarks/{name} --smoke exited {proc.returncode}\n{output}"
    said = (proc.stdout + proc.stderr).strip().splitlines()
    if len(said) == 1 and said[0].startswith(f"{name}: skipped: "):
        assert smoke.peer, f"benchmarks/{name} has no peer to skip for, yet: {said[0]}"
        pytest.skip(said[0])
    missing = [line for line in smoke.lines if not re.search(rf"(?m)^{line}\s*$", proc.stdout)]
    assert not missing, f"benchmarks/{name} --smoke did not print lines matching {missing}\n{output}"


PEER_VARIABLES = ("TORCHGEO_PYTHON", "LITSERVE_PYTHON", "TORCHVISION_CHECKOUT")
#: Peers with a venv of their own under .peers/ (``make peers``), used where their variable is unset: without the
#: peer here means the variable naming a path that does not exist.
PEER_PLACES = ("ULTRALYTICS_PYTHON", "FASTAI_PYTHON")


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name, smoke in SMOKES.items() if smoke.peer and name in SCRIPTS])
def test_a_peer_benchmark_without_its_peer_skips_in_one_line(name: str, tmp_path: Path) -> None:
    """Without its peer a smoke skips (exit 0, one line saying why); a full run stops (exit 1, the same line)."""
    env = {key: value for key, value in os.environ.items() if key not in PEER_VARIABLES}
    env.update({key: str(tmp_path / "no-peer" / "python") for key in PEER_PLACES})
    smoke = _run_smoke(name, env, tmp_path)
    said = (smoke.stdout + smoke.stderr).strip().splitlines()
    assert smoke.returncode == 0 and len(said) == 1, said
    assert said[0].startswith(f"{name}: skipped: ") and "not" in said[0] and "docstring" in said[0], said
    full = subprocess.run(
        [sys.executable, str(BENCHMARKS / name)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    said = (full.stdout + full.stderr).strip().splitlines()
    assert full.returncode == 1 and len(said) == 1 and said[0].startswith(f"{name}: "), said
