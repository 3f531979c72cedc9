"""The measured fit of ``benchmarks/gpu_check.py``: the template's ``ImageClassifier`` and a Lightning ``Trainer``
built from the repository's own YAML configs (a stack, as ``--config configs/default.yaml --config ...`` composes
it), on synthetic uint8 batches already on the device or on any data module; timed over a window of optimiser steps.

A part of ``benchmarks/gpu_check.py``, imported by it, not a benchmark: no smoke of its own; ``gpu_check.py --smoke``
runs it.
"""

from __future__ import annotations

import gc
import importlib
import time
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import torch
import yaml
from gpu_check_device import UtilisationSampler, tf32, utilisation_reader
from torch.utils.data import DataLoader, Dataset

from litstarter.tasks.base import batch_size
from litstarter.tasks.classification import ImageClassifier

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "configs"
#: What the check's timed fits never have: the logger, the callbacks and the epoch count (steps are counted).
NOT_TIMED = ("logger", "callbacks", "max_epochs")
NO_GPU = "skipped: no GPU"


@dataclass(frozen=True)
class Sizes:
    """How big the check's fits are.

    Args:
        backbone: Registered backbone name.
        image_size: Square side, px.
        batch_size: Images per step.
        warmup: Optimiser steps before the timed window (cuDNN's autotuning, compilation, allocator growth).
        steps: Optimiser steps in the timed window.
        data_steps: Timed steps of the data-pipeline fits (NVML averages utilisation over 1/6 to 1 s).
        images: JPEGs generated for the data-pipeline fit.
        num_workers: Loader workers of that fit; ``None``: the template's default (about half the cores).
    """

    backbone: str
    image_size: int
    batch_size: int
    warmup: int
    steps: int
    data_steps: int
    images: int
    num_workers: int | None


GPU_SIZES = Sizes("resnet18", 224, 256, warmup=8, steps=30, data_steps=60, images=4096, num_workers=None)
DRY_SIZES = Sizes("small_cnn", 8, 2, warmup=1, steps=1, data_steps=1, images=40, num_workers=0)


def stack(*configs: str) -> tuple[dict, dict]:
    """``(trainer flags, model arguments)`` as ``configs/default.yaml`` then each of ``configs`` set them, later
    files overriding earlier ones key by key (top-level keys of each section, as these configs are written)."""
    trainer, model = {}, {}
    for name in ("default.yaml", *configs):
        config = yaml.safe_load((CONFIGS / name).read_text()) or {}
        trainer.update(config.get("trainer") or {})
        section = config.get("model") or {}
        model.update((section.get("init_args") or {}) if "class_path" in section else section)  # the task's args
    for key in NOT_TIMED:
        trainer.pop(key, None)
    # The task's defaults (optimizer/lr_scheduler: null) are default.yaml's AdamW and 5% warmup-cosine; no
    # pretrained weights: nothing is downloaded, and weights do not change the speed.
    for key in ("optimizer", "lr_scheduler"):
        model.pop(key, None)
    model["weights"] = None
    return trainer, model


def instantiate(spec):
    """A config's ``{class_path, init_args}`` as the object (a Trainer strategy); anything else as it is."""
    if isinstance(spec, dict) and "class_path" in spec:
        module, _, name = spec["class_path"].rpartition(".")
        return getattr(importlib.import_module(module), name)(**(spec.get("init_args") or {}))
    return spec


class _SameBatch(Dataset):
    """``length`` times the same ``(images, labels)`` batch (a loader with ``batch_size=None`` yields it as is)."""

    def __init__(self, batch: tuple[torch.Tensor, torch.Tensor], length: int) -> None:
        self.batch, self.length = batch, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.batch


class SyntheticImages(L.LightningDataModule):
    """Random uint8 batches made once on the Trainer's device: the step with the input's cost removed. Provides the
    facts of the data contract (``litstarter.data.base``).

    Args:
        sizes: Image side and batch size.
        batches_per_epoch: Train batches per epoch (the same as the data-fed fit's, so epoch ends cost alike).
        num_classes: Classes of the random labels.
    """

    def __init__(self, sizes: Sizes, batches_per_epoch: int, num_classes: int = 10) -> None:
        super().__init__()
        self.class_names = [f"class_{i}" for i in range(num_classes)]
        self.num_classes, self.channels = num_classes, 3
        self.image_size = (sizes.image_size, sizes.image_size)
        self.batch_size, self.batches_per_epoch = sizes.batch_size, batches_per_epoch

    def train_dataloader(self) -> DataLoader:
        device = self.trainer.strategy.root_device
        generator = torch.Generator().manual_seed(0)
        shape = (self.batch_size, self.channels, *self.image_size)
        images = torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator).to(device)  # (B, C, H, W)
        labels = torch.randint(0, self.num_classes, (self.batch_size,), generator=generator).to(device)  # (B,)
        return DataLoader(_SameBatch((images, labels), self.batches_per_epoch), batch_size=None)


class StepTimer(L.Callback):
    """Wall time from the fit's start to the end of its first step and to the end of ``warmup`` steps (compilation,
    recompilation, autotuning), then over the ``steps`` optimiser steps after them (device synchronised at both
    ends: the window holds whole steps and their data loading)."""

    def __init__(self, warmup: int, steps: int, sampler: UtilisationSampler | None = None) -> None:
        self.warmup, self.steps, self.sampler = warmup, steps, sampler
        self.images = 0  # in the window: an epoch's last batch may be short
        self.fit_start = self.first_step_s = self.warmup_s = self.start = self.end = None
        self.utilisation: float | None = None

    def _now(self, pl_module: L.LightningModule) -> float:
        if pl_module.device.type == "cuda":
            torch.cuda.synchronize(pl_module.device)
        return time.perf_counter()

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.fit_start = time.perf_counter()

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx) -> None:
        step = trainer.global_step  # optimiser steps done
        if self.warmup < step <= self.warmup + self.steps:
            self.images += batch_size(batch)
        if step == 1:
            self.first_step_s = self._now(pl_module) - self.fit_start
        if step == self.warmup:
            self.start = self._now(pl_module)
            self.warmup_s = self.start - self.fit_start
            if self.sampler is not None:
                self.sampler.start()
        if step == self.warmup + self.steps:
            self.end = self._now(pl_module)
            if self.sampler is not None:
                self.utilisation = self.sampler.stop()

    def result(self) -> dict:
        if self.end is None:
            raise RuntimeError(f"the fit stopped before its {self.warmup + self.steps} steps")
        seconds = self.end - self.start
        return {
            "images_per_s": round(self.images / seconds, 1),
            "step_ms": round(1000 * seconds / self.steps, 2),
            "first_step_s": round(self.first_step_s, 2),
            "warmup_s": round(self.warmup_s, 2),
            "timed_steps": self.steps,
        }


def measure(
    sizes: Sizes,
    configs: tuple[str, ...],
    root_dir: Path,
    trainer_overrides: dict | None = None,
    model_overrides: dict | None = None,
    datamodule: L.LightningDataModule | None = None,
    callbacks: tuple[L.Callback, ...] = (),
    tf32_enabled: bool | None = None,
    steps: int | None = None,
    checkpoint: Path | None = None,
) -> dict:
    """One timed fit of the config stack ``configs``, with ``trainer_overrides`` / ``model_overrides`` on top.

    Returns images/s and step time over the window, the first step's time (compilation, autotuning), peak CUDA memory
    and mean GPU utilisation over the window (``"skipped: no GPU"`` without one). ``checkpoint``: save one there after.
    """
    steps = steps or sizes.steps
    trainer_flags, model_args = stack(*configs)
    trainer_flags.update(trainer_overrides or {})
    model_args.update({"backbone": sizes.backbone}, **(model_overrides or {}))
    data = datamodule or SyntheticImages(sizes, batches_per_epoch=sizes.warmup + steps)
    model = ImageClassifier(**model_args, num_classes=data.num_classes, in_channels=data.channels,
                            image_size=data.image_size, class_names=data.class_names)  # fmt: skip
    reader = utilisation_reader()
    timer = StepTimer(sizes.warmup, steps, UtilisationSampler(reader[0]) if reader else None)
    trainer = L.Trainer(
        **{**trainer_flags, "strategy": instantiate(trainer_flags.get("strategy", "auto"))},
        max_steps=sizes.warmup + steps, max_epochs=-1, limit_val_batches=0, num_sanity_val_steps=0,
        logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        callbacks=[timer, *callbacks], default_root_dir=str(root_dir),
    )  # fmt: skip
    cuda = trainer.strategy.root_device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    try:
        with tf32(tf32_enabled):
            trainer.fit(model, datamodule=data)
        result = timer.result()
        result["fit_s"] = round(time.perf_counter() - start, 2)
        result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3) if cuda else NO_GPU
        util = timer.utilisation
        if reader is None:
            result["gpu_utilisation_pct"] = "unavailable: no NVML, no nvidia-smi" if cuda else NO_GPU
        else:
            result["gpu_utilisation_pct"] = round(util, 1) if util is not None else "no sample came"
        result["precision"] = str(trainer_flags.get("precision"))
        result["tf32"] = {None: "PyTorch's default", True: "on", False: "off"}[tf32_enabled]
        if checkpoint is not None:
            trainer.save_checkpoint(checkpoint)
        return result
    finally:
        if timer.sampler is not None:
            timer.sampler.stop()
        del trainer, model
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()


def check_checkpoint(path: Path, sizes: Sizes) -> dict:
    """Load a checkpoint the check saved (``weights_only=True``) into a fresh, plain ImageClassifier, strictly."""
    state = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
    model = ImageClassifier(backbone=sizes.backbone, num_classes=10, image_size=(sizes.image_size,) * 2)
    model.load_state_dict(state, strict=True)
    return {"checkpoint_mib": round(path.stat().st_size / 2**20, 1), "tensors": len(state), "loads_strictly": True}
