"""The sections of ``benchmarks/gpu_check.py`` (its docstring says what each measures). Each takes the check
(``gpu_check.Check``: sizes, device, scratch folder, report) and its JSON entry, and fills ``entry["results"]`` one
fit at a time through ``check.fit``.

A part of ``benchmarks/gpu_check.py``, imported by it, not a benchmark: no smoke of its own; ``gpu_check.py --smoke``
runs it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpu_check import Check

# torch and litstarter are imported inside the sections: the image cache's decoder processes start with `spawn`
# and re-import the main module, which imports this one.

GPU_STACK = ("trainer/gpu.yaml", "model/resnet18.yaml")
DRY_RUN_VARIANTS = ("fp32_tf32_off", "bf16_channels_last")  # on a CPU the fits are overhead: two cover the path


def ratio(top: dict | None, bottom: dict | None, key: str = "images_per_s") -> float | None:
    return round(top[key] / bottom[key], 3) if top and bottom else None


def section_precision(check: Check, entry: dict) -> None:
    fp32 = {"trainer_overrides": {"precision": "32-true"}}  # bf16: configs/trainer/gpu.yaml's own precision
    channels_last = {"model_overrides": {"channels_last": True}}
    variants = {  # the figures the targets need first, should the cap cut the section short
        "bf16_channels_last": channels_last,
        "fp32_tf32_off": {**fp32, "tf32_enabled": False},
        "fp32_tf32_on": {**fp32, "tf32_enabled": True},
        "bf16": {},
        "fp32_tf32_off_channels_last": {**fp32, **channels_last, "tf32_enabled": False},
        "fp32_tf32_on_channels_last": {**fp32, **channels_last, "tf32_enabled": True},
    }
    for name, spec in variants.items():
        if spec.get("tf32_enabled") and not check.gpu:
            entry["results"][name] = "skipped: no GPU (TF32 is a CUDA setting)"
            continue
        if not check.gpu and name not in DRY_RUN_VARIANTS:
            entry["results"][name] = f"skipped: dry run ({' and '.join(DRY_RUN_VARIANTS)} take the same path)"
            continue
        result = check.fit(entry, name, **{k: dict(v) if isinstance(v, dict) else v for k, v in spec.items()})
        if result and (check.best is None or result["images_per_s"] > check.best["result"]["images_per_s"]):
            check.best = {"name": name, "spec": spec, "result": result}
    results = {k: v for k, v in entry["results"].items() if isinstance(v, dict)}
    top = results.get("bf16_channels_last")
    entry["ratios"] = {
        "bf16_channels_last / fp32_tf32_off": ratio(top, results.get("fp32_tf32_off")),
        "bf16_channels_last / fp32_tf32_on": ratio(top, results.get("fp32_tf32_on")),
        "bf16_channels_last / bf16": ratio(top, results.get("bf16")),
        "target": "bf16_channels_last / fp32 >= 2",
    }
    entry["best"] = check.best["name"] if check.best else None


def section_data(check: Check, entry: dict) -> None:
    import gpu_check_fit as fit
    from data_pipeline import make_jpeg_folder

    from litstarter.data import ImageFolderDataModule

    sizes, root = check.sizes, check.workdir / "jpegs"
    start = time.perf_counter()
    make_jpeg_folder(root, sizes.images)
    entry["generate_s"] = round(time.perf_counter() - start, 1)
    dm = ImageFolderDataModule(
        str(root), image_size=sizes.image_size, val_fraction=0.1, test_fraction=0.0, batch_size=sizes.batch_size,
        num_workers=sizes.num_workers, cache_dir=str(check.workdir / "cache"),
    )  # fmt: skip
    start = time.perf_counter()
    dm.prepare_data()
    dm.setup("fit")
    entry["cache_build_s"] = round(time.perf_counter() - start, 1)
    per_epoch = -(-len(dm.train_set) // sizes.batch_size)
    entry.update(train_images=len(dm.train_set), batches_per_epoch=per_epoch, num_workers=dm.num_workers)
    spec, steps = check.best_spec(), sizes.data_steps
    data_fed = check.fit(entry, "image_folder", ("data/image_folder.yaml", *GPU_STACK), datamodule=dm, steps=steps,
                         **spec)  # fmt: skip
    synthetic = fit.SyntheticImages(sizes, batches_per_epoch=per_epoch)
    on_device = check.fit(entry, "synthetic_on_device", ("data/image_folder.yaml", *GPU_STACK), datamodule=synthetic,
                          steps=steps, **check.best_spec())  # fmt: skip
    entry["ratios"] = {
        "image_folder / synthetic step time": ratio(data_fed, on_device, "step_ms"),
        # An epoch's last batch is short: per image is the like-for-like figure.
        "image_folder / synthetic time per image": ratio(on_device, data_fed),
        "target": "time per image <= 1.1",
        "variant": check.best["name"],
    }


def section_compile(check: Check, entry: dict) -> None:
    spec = check.best_spec()
    if not check.gpu:  # inductor on a CPU needs a C++ toolchain and minutes; dynamo alone walks the same path
        spec.setdefault("model_overrides", {})["compile"] = {"backend": "eager"}
    compiled = check.fit(entry, "compiled", (*GPU_STACK, "perf/compile.yaml"), **spec)
    plain = check.best["result"]
    entry["results"]["not_compiled"] = f"= precision.{check.best['name']}"
    entry["ratios"] = {
        "compiled / not compiled images_per_s": ratio(compiled, plain),
        "compile_s (warm-up steps, compiled - not compiled)": (
            round(compiled["warmup_s"] - plain["warmup_s"], 1) if compiled else None
        ),
        "backend": "inductor" if check.gpu else "eager (dry run)",
    }


def section_memory(check: Check, entry: dict) -> None:
    results = check.report.data["sections"].get("precision", {}).get("results", {})
    fp32, bf16 = ("fp32_tf32_on", "bf16") if check.gpu else DRY_RUN_VARIANTS  # TF32 on: PyTorch's default for convs
    sources = {"fp32": fp32, "bf16": bf16}
    for name, source in sources.items():
        measured = results.get(source)
        entry["results"][name] = measured["peak_memory_gib"] if isinstance(measured, dict) else f"no {source} fit"
    result = check.fit(entry, "bf16_gradient_checkpointing", (*GPU_STACK, "perf/gradient_checkpointing.yaml"))
    if result:
        entry["results"]["bf16_gradient_checkpointing"] = result["peak_memory_gib"]
    entry["unit"] = "GiB, torch.cuda.max_memory_allocated over the fit"


def section_deterministic(check: Check, entry: dict) -> None:
    spec = check.best_spec()
    spec.setdefault("trainer_overrides", {}).update(deterministic=True, benchmark=False)
    result = check.fit(entry, "deterministic", **spec)
    entry["results"]["not_deterministic"] = f"= precision.{check.best['name']} (gpu.yaml: benchmark true)"
    entry["ratios"] = {"deterministic / not images_per_s": ratio(result, check.best["result"])}


def section_nan_guard(check: Check, entry: dict) -> None:
    from litstarter.callbacks import StopOnNonFiniteLoss

    result = check.fit(entry, "with_nan_guard", callbacks=(StopOnNonFiniteLoss(),), **check.best_spec())
    entry["results"]["without"] = f"= precision.{check.best['name']}"
    entry["ratios"] = {"with / without images_per_s": ratio(result, check.best["result"])}


def section_fsdp(check: Check, entry: dict) -> None:
    import gpu_check_fit as fit
    import torch

    trainer, _ = fit.stack("trainer/fsdp.yaml")
    entry["strategy"] = type(fit.instantiate(trainer["strategy"])).__name__  # the config's strategy builds
    configs, overrides = ("trainer/fsdp.yaml", "model/resnet18.yaml"), {"devices": 1}
    if not check.gpu:  # Lightning's FSDP refuses a CPU: the same fit and checkpoint, without the strategy
        entry["status_note"] = f"{fit.NO_GPU}: FSDP needs CUDA; the fit and checkpoint ran on the default strategy"
        overrides.update(strategy="auto", precision="32-true")
    path = check.workdir / "fsdp.ckpt"
    result = check.fit(entry, "fsdp_one_gpu" if check.gpu else "no_fsdp_cpu", configs, checkpoint=path,
                       trainer_overrides=overrides)  # fmt: skip
    if result is None and check.gpu:
        # Lightning 2.6's FSDPPrecision refuses gradient_clip_algorithm 'norm', which default.yaml sets: if that
        # is what failed, FSDP itself and its checkpoint are still worth knowing about.
        overrides["gradient_clip_val"] = None
        result = check.fit(entry, "fsdp_one_gpu_no_clipping", configs, checkpoint=path, trainer_overrides=overrides)
    if result:
        entry["checkpoint"] = fit.check_checkpoint(path, check.sizes)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()  # FSDP's, even on one GPU


SECTIONS: dict[str, Callable] = {
    "precision": section_precision,
    "data": section_data,
    "compile": section_compile,
    "memory": section_memory,
    "deterministic": section_deterministic,
    "nan_guard": section_nan_guard,
    "fsdp": section_fsdp,  # last: its process group should not be there while the others run
}
