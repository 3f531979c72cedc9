"""Presets that cannot run as written on this machine, adjusted in the parsed config with a log line, before
anything is built: SyncBatchNorm on CPU processes, bf16 on a GPU without it, a progress bar callback beside
``enable_progress_bar: false``, a learning-rate monitor beside ``logger: false``."""

from __future__ import annotations

import logging

import torch

log = logging.getLogger("litstarter")


def apply_fallbacks(config) -> None:
    """Every fallback below, on the active subcommand's config."""
    fall_back_to_fp16_without_bf16(config)
    turn_off_sync_batchnorm_on_cpu(config)
    drop_progress_bar_when_disabled(config)
    drop_lr_monitor_without_logger(config)


def fall_back_to_fp16_without_bf16(config) -> None:
    """``precision: bf16-mixed`` on a CUDA GPU without bf16 (before Ampere) becomes ``16-mixed``, with a log line.

    ``16-mixed`` needs loss scaling (Lightning adds a GradScaler) and can overflow where bf16 cannot; on a CPU,
    or a GPU that has bf16, nothing changes.
    """
    trainer = config.get("trainer") or {}
    if trainer.get("precision") not in ("bf16-mixed", "bf16"):
        return
    if torch.cuda.is_available() and trainer.get("accelerator") in ("auto", "gpu", "cuda", None):
        if not torch.cuda.is_bf16_supported():
            log.warning(
                "trainer.precision=bf16-mixed but %s has no bf16 support: using 16-mixed (fp16 with loss scaling)",
                torch.cuda.get_device_name(0),
            )
            trainer.precision = "16-mixed"


def turn_off_sync_batchnorm_on_cpu(config) -> None:
    """``trainer.sync_batchnorm: true`` (configs/trainer/ddp.yaml) on CPU processes becomes ``false``, with a log line.

    torch's SyncBatchNorm runs only on GPUs; on CPU each process then keeps BatchNorm statistics of its own slice
    of the batch, as plain DDP does.
    """
    trainer = config.get("trainer") or {}
    if not trainer.get("sync_batchnorm"):
        return
    accelerator = str(trainer.get("accelerator") or "auto").lower()
    if accelerator == "cpu" or (accelerator == "auto" and not torch.cuda.is_available()):
        log.warning(
            "trainer.sync_batchnorm=true but the processes run on CPU, where SyncBatchNorm is not available: turned"
            " SyncBatchNorm off (each process normalises with its own batch's statistics)"
        )
        trainer.sync_batchnorm = False


def drop_progress_bar_when_disabled(config) -> None:
    """``--trainer.enable_progress_bar false`` removes the progress bar callback the default config lists.

    Lightning refuses a progress bar callback beside ``enable_progress_bar=False``; the flag is what the user
    just typed, so it wins over the default config's ``TQDMProgressBar`` (there only to set its refresh rate).
    """
    trainer = config.get("trainer") or {}
    if trainer.get("enable_progress_bar") is not False or not trainer.get("callbacks"):
        return
    kept = [c for c in trainer.callbacks if not str(_class_path(c)).endswith("ProgressBar")]
    if len(kept) != len(trainer.callbacks):
        trainer.callbacks = kept


def drop_lr_monitor_without_logger(config) -> None:
    """``--trainer.logger false`` removes the ``LearningRateMonitor`` the default config lists, with a log line.

    Lightning refuses the monitor without a logger, and only once setup and the sanity check are done; there is
    nowhere to write the learning rate, so the flag the user typed wins.
    """
    trainer = config.get("trainer") or {}
    if trainer.get("logger") not in (False, None, []) or not trainer.get("callbacks"):
        return
    kept = [c for c in trainer.callbacks if not str(_class_path(c)).endswith("LearningRateMonitor")]
    if len(kept) != len(trainer.callbacks):
        log.info("trainer.logger is false: LearningRateMonitor dropped (it has no logger to write to)")
        trainer.callbacks = kept


def _class_path(callback) -> str:
    """A callback entry's ``class_path`` (a config Namespace or dict), or the class name of an instance."""
    if isinstance(callback, dict):
        return callback.get("class_path", "")
    return getattr(callback, "class_path", None) or type(callback).__name__
