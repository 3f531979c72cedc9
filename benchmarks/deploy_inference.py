"""Inference speed of every artifact `litstarter export` writes, measured side by side in one run.

    .venv/bin/python benchmarks/deploy_inference.py [--ckpt_path CKPT] [--threads 2] [--epochs 5] [--smoke]

Without ``--ckpt_path`` it first makes two models worth timing on a synthetic image folder (4 shape classes,
random colours, positions and noise), both with the template's default image-folder setup
(``configs/data/image_folder.yaml``: ``image_size: auto``, which is 80 px for these images): the default
backbone ``small_cnn`` (``--epochs``) and ``resnet18`` from random init (``--resnet18_epochs``). For each,
``litstarter export`` writes and verifies every format, and each runtime is timed on the same test images with the
same thread count:

* latency at batch 1 (median of single calls) and throughput at batch 64 (images/s, median batch time);
* eager (autograd on, as a naive script runs it), eager under ``inference_mode``, TorchScript, pt2,
  ONNX Runtime fp32 and ONNX Runtime INT8 (static QDQ, per channel);
* rounds interleave the runtimes, so a busy neighbour on a shared machine slows them all alike.

Prints each runtime's ratio to eager, INT8 throughput over ORT fp32, and the INT8 accuracy drop on the test
split, with the targets: ORT fp32 latency <= 0.4x eager at batch 1; INT8 throughput >= 2x ORT fp32 at
batch 64 (for resnet18 always; for the default backbone where the CPU has VNNI) with an accuracy drop <= 1
point. Beside them: the CPU's int8 dot-product support (VNNI or not) and the ONNX Runtime session settings. An
artifact the export left out (an INT8 model past its accuracy bound, say: the default formats go on without it) is
not timed, and its line says why.

``--smoke`` (a 1-epoch ``small_cnn`` on 160 training images, one round of 0.02 s a runtime on one thread, the INT8
accuracy bound lifted: a 1-epoch model's drop is noise, and the smoke checks the path, not the figure) runs the same
code end to end and prints the same table; the test suite runs it.

Why the INT8 / fp32 ratio moves between machines: ORT's x86 int8 convolutions multiply u8 activations by s8
weights. With VNNI (AVX512-VNNI, AVX-VNNI) one instruction does the 4-way multiply-add into int32; on AVX2
alone it takes three (pmaddubsw, pmaddwd, paddd), so int8 holds about 2x the fp32 FMA rate at best, and less
once the quantize/dequantize at each end and the non-conv ops are paid. The smaller the convolutions (a
small CNN at 64-80 px, worse still after a downsampling stem), the larger that fixed share: resnet18's 3x3
convolutions over 64-512 channels are where int8 pays on any x86 CPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

REPO = Path(__file__).resolve().parents[1]
SHAPES = ("circle", "square", "triangle", "cross")


def make_shapes(root: Path, per_class: dict[str, int], size: int = 80, seed: int = 0) -> None:
    """``root/{split}/{shape}/*.png``: one shape per image, random size, position and grey levels, plus noise."""
    rng = np.random.default_rng(seed)
    for split, n in per_class.items():
        for shape in SHAPES:
            folder = root / split / shape
            folder.mkdir(parents=True)
            for i in range(n):
                # Small, faint and noisy on purpose: a model that is not perfect, so an INT8 drop would show.
                background = int(rng.integers(0, 120))
                image = Image.new("RGB", (size, size), (background,) * 3)
                draw = ImageDraw.Draw(image)
                r = int(rng.integers(size // 8, size // 3))
                cx, cy = (int(c) for c in rng.integers(r, size - r, size=2))
                colour = tuple(int(background + c) for c in rng.integers(60, 140, size=3))
                box = (cx - r, cy - r, cx + r, cy + r)
                if shape == "circle":
                    draw.ellipse(box, fill=colour)
                elif shape == "square":
                    draw.rectangle(box, fill=colour)
                elif shape == "triangle":
                    draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)
                else:
                    w = max(2, r // 3)
                    draw.rectangle((cx - r, cy - w, cx + r, cy + w), fill=colour)
                    draw.rectangle((cx - w, cy - r, cx + w, cy + r), fill=colour)
                pixels = np.asarray(image, dtype=np.float32) + rng.normal(0, 25, size=(size, size, 3))
                Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(folder / f"{i:04d}.png")


#: ``--smoke``'s images per class and split, against the full run's ``{"train": 200, "val": 40, "test": 100}``.
SMOKE_SHAPES = {"train": 40, "val": 10, "test": 20}
#: The runtimes timed from an artifact of the export, by its file name.
ARTIFACTS = {
    "TorchScript": "model.ts",
    "pt2 (torch.export)": "model.pt2",
    "ORT fp32": "model.onnx",
    "ORT int8": "model.int8.onnx",
}


def train_model(work: Path, name: str, epochs: int, extra: list[str]) -> Path:
    """Train the default image-folder setup (plus ``extra``) on ``work/shapes``; return the best checkpoint."""
    from litstarter.cli import main as cli_main

    root = work / "shapes"
    cli_main(
        [
            "fit",
            "--config", str(REPO / "configs" / "default.yaml"),
            "--config", str(REPO / "configs" / "data" / "image_folder.yaml"),
            f"--data.init_args.root={root}",
            f"--data.init_args.cache_dir={work / 'cache'}",
            "--data.init_args.num_workers=0",
            "--data.init_args.augmentation.crop_scale=[0.6, 1.0]",  # keep the shape in view
            f"--trainer.max_epochs={epochs}",
            f"--trainer.logger.init_args.save_dir={work}",
            f"--trainer.logger.init_args.name={name}",
            "--trainer.enable_model_summary=false",
            *extra,
        ]
    )  # fmt: skip
    (best,) = [p for p in (work / name / "version_0" / "checkpoints").glob("*.ckpt") if p.name != "last.ckpt"]
    return best


def time_calls(fn: Callable[[], object], seconds: float, max_calls: int) -> list[float]:
    """Call ``fn`` repeatedly for about ``seconds`` (at least 3 calls); return each call's duration."""
    durations: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(durations) < 3 or (time.perf_counter() < deadline and len(durations) < max_calls):
        start = time.perf_counter()
        fn()
        durations.append(time.perf_counter() - start)
    return durations


def int8_support() -> str:
    """The CPU's int8 dot-product instructions, from /proc/cpuinfo (Linux; 'unknown' elsewhere)."""
    try:
        flags = next(
            set(line.split(":", 1)[1].split())
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("flags")
        )
    except (OSError, StopIteration):
        return "unknown (no /proc/cpuinfo)"
    found = [name for flag, name in INT8_FLAGS.items() if flag in flags]
    if found:
        return "VNNI: " + ", ".join(found)
    return "no VNNI (" + ("AVX2 only" if "avx2" in flags else "no AVX2 either") + ")"


INT8_FLAGS = {"avx512_vnni": "AVX512-VNNI", "avx_vnni": "AVX-VNNI", "amx_int8": "AMX-INT8"}
BACKBONES = {"small_cnn": [], "resnet18": ["--model.backbone=resnet18", "--model.weights=null"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt_path", default=None, help="Time this checkpoint only (its run's export is remade).")
    parser.add_argument("--threads", type=int, default=2, help="Intra-op threads for torch and ONNX Runtime alike.")
    parser.add_argument("--epochs", type=int, default=5, help="Training epochs for the synthetic small_cnn.")
    parser.add_argument("--resnet18_epochs", type=int, default=3, help="Training epochs for the resnet18.")
    parser.add_argument("--rounds", type=int, default=10, help="Interleaved timing rounds per runtime.")
    parser.add_argument("--seconds", type=float, default=0.3, help="Seconds per runtime, batch size and round.")
    parser.add_argument("--work_dir", default=None, help="Where to put data, run and export (default: a temp dir).")
    parser.add_argument("--smoke", action="store_true", help="A quick end-to-end check: small_cnn, 1 epoch, 1 round.")
    args = parser.parse_args()
    if args.smoke:
        args.epochs, args.rounds, args.seconds, args.threads = 1, 1, 0.02, 1

    import torch

    from litstarter.extras.deploy.backends import ORT_EXECUTION_MODE, ORT_OPTIMIZATION_LEVEL

    torch.set_num_threads(args.threads)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work_dir or tmp)
        if args.ckpt_path:
            results.append(time_checkpoint(Path(args.ckpt_path), work / "export", args))
        else:
            make_shapes(work / "shapes", SMOKE_SHAPES if args.smoke else {"train": 200, "val": 40, "test": 100})
            for name, extra in list(BACKBONES.items())[: 1 if args.smoke else None]:
                epochs = args.resnet18_epochs if name == "resnet18" else args.epochs
                ckpt = train_model(work, name, epochs, extra)
                results.append(time_checkpoint(ckpt, work / f"export-{name}", args))
    print(f"\nCPU int8 support: {int8_support()}; torch {torch.__version__}, {args.threads} thread(s)")
    print(f"ONNX Runtime session: graph optimisation {ORT_OPTIMIZATION_LEVEL}, execution mode {ORT_EXECUTION_MODE}")
    for result in results:
        print_result(result)
    print(json.dumps([{k: v for k, v in r.items() if k != "quantization"} for r in results]))


def time_checkpoint(ckpt: Path, out: Path, args) -> dict:
    """Export ``ckpt`` (verified), then time every runtime on its test images; return the figures."""
    import torch

    from litstarter.extras.deploy.backends import open_model, torchscript_quietly
    from litstarter.extras.deploy.checkpoint import network_from_checkpoint
    from litstarter.extras.deploy.export import export_checkpoint
    from litstarter.extras.deploy.export_data import load_export_data
    from litstarter.extras.deploy.verify import Tolerances, format_report

    tolerances = Tolerances(int8_max_accuracy_drop=1.0) if args.smoke else Tolerances()
    report = export_checkpoint(ckpt, out=out, overwrite=True, tolerances=tolerances)  # out: never a run's own export
    print(format_report(report))
    if not report["passed"]:
        raise SystemExit("export verification failed; not timing rejected artifacts")
    left_out = report.get("left_out", {})
    net, hparams = network_from_checkpoint(ckpt)
    contract = open_model(out / "model.onnx").contract
    data = load_export_data(Path(report["source"]["config"]), hparams, verify_samples=100_000)
    images, labels = data.test_images, data.test_labels
    batch1, batch64 = images[:1], np.resize(images, (64, *images.shape[1:]))  # (64, C, H, W) uint8

    def eager(x: np.ndarray) -> np.ndarray:
        return net(torch.from_numpy(x)).detach().numpy()

    def eager_inference_mode(x: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            return net(torch.from_numpy(x)).numpy()

    runtimes: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "eager": eager,
        "eager + inference_mode": eager_inference_mode,
    }
    with torchscript_quietly():
        for name, file in ARTIFACTS.items():
            if file not in left_out:  # TorchScript and pt2 are pickles of code: this run wrote them
                trust = {"trust_model": True} if file.endswith((".ts", ".pt2")) else {}
                runtimes[name] = open_model(out / file, num_threads=args.threads, **trust)
    latency, batch_time = interleaved_times(runtimes, batch1, batch64, args)
    accuracy = {}
    for name in [n for n in ("eager + inference_mode", "ORT int8") if n in runtimes]:
        logits = np.concatenate([runtimes[name](images[i : i + 64]) for i in range(0, len(images), 64)])
        accuracy[name] = float((logits.argmax(1) == labels).mean())
    return {
        "backbone": hparams["backbone"],
        "parameters": sum(p.numel() for p in net.parameters()),
        "image_size": "x".join(map(str, contract.image_size)),
        "channels": contract.channels,
        "test_images": len(labels),
        "latency_ms": {n: statistics.median(v) * 1e3 for n, v in latency.items()},
        "throughput_img_s": {n: 64 / statistics.median(v) for n, v in batch_time.items()},
        "accuracy": accuracy,
        "quantization": report["artifacts"].get("model.int8.onnx", {}).get("quantization", {}),
        "left_out": {name: left_out[file] for name, file in ARTIFACTS.items() if file in left_out},
    }


def interleaved_times(runtimes: dict, batch1: np.ndarray, batch64: np.ndarray, args) -> tuple[dict, dict]:
    """Per runtime, every batch-1 call's and every batch-64 call's duration, rounds interleaving the runtimes."""
    latency: dict[str, list[float]] = {name: [] for name in runtimes}
    batch_time: dict[str, list[float]] = {name: [] for name in runtimes}
    for run in runtimes.values():  # warm-up: first calls allocate, pick kernels, fill caches
        for _ in range(3):
            run(batch1)
            run(batch64)
    for _ in range(args.rounds):
        for name, run in runtimes.items():
            latency[name] += time_calls(lambda run=run: run(batch1), args.seconds, 2000)
            batch_time[name] += time_calls(lambda run=run: run(batch64), args.seconds, 200)
    return latency, batch_time


def print_result(result: dict) -> None:
    """One backbone's table and its figures against the targets."""
    lat, thr, accuracy = result["latency_ms"], result["throughput_img_s"], result["accuracy"]
    print(
        f"\n{result['backbone']} ({result['parameters'] / 1e6:.2f} M parameters) at {result['image_size']} px, "
        f"{result['channels']} channels"
    )
    header = f"{'runtime':24s} {'batch 1 ms':>10s} {'x eager':>8s} {'batch 64 img/s':>15s} {'x eager':>8s}"
    print(header)
    print("-" * len(header))
    for name in lat:
        print(
            f"{name:24s} {lat[name]:10.3f} {lat[name] / lat['eager']:8.2f} {thr[name]:15.1f} "
            f"{thr[name] / thr['eager']:8.2f}"
        )
    for name, why in result.get("left_out", {}).items():
        print(f"{name:24s} not timed: the export left its artifact out ({why})")
    if "ORT fp32" in lat:
        fp32_latency = lat["ORT fp32"] / lat["eager"]
        met = verdict(fp32_latency <= 0.4)
        print(f"ORT fp32 latency at batch 1: {fp32_latency:.2f}x eager (target <= 0.4x): {met}")
    if "ORT int8" not in lat or "ORT fp32" not in lat:
        return
    int8_speedup = thr["ORT int8"] / thr["ORT fp32"]
    drop = 100 * (accuracy["eager + inference_mode"] - accuracy["ORT int8"])
    quant = result["quantization"]
    applies = result["backbone"] == "resnet18" or int8_support().startswith("VNNI")
    target = verdict(int8_speedup >= 2) if applies else "not a target without VNNI (see the top of this file)"
    print(f"ORT int8 throughput at batch 64: {int8_speedup:.2f}x ORT fp32 (target >= 2x): {target}")
    print(
        f"INT8 ({quant['mode']}, per channel {quant.get('per_channel')}) accuracy on {result['test_images']} test "
        f"images: {accuracy['ORT int8']:.4f} vs eager {accuracy['eager + inference_mode']:.4f}, drop {drop:.2f} "
        f"points (target <= 1): {verdict(drop <= 1)}"
    )


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


if __name__ == "__main__":
    main()
