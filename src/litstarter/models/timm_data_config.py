"""A timm backbone's pretrained preprocessing: mean, std, input size, resize filter and crop fraction.

:func:`data_config` reads it from a built model (``timm.data.resolve_model_data_config``); :func:`resize_of` reads
the resize filter and crop fraction from the name alone, before anything is built, so that the data module can
cache images as the backbone expects (the CLI fills ``data.interpolation`` and ``data.crop_pct`` from it).
"""

from __future__ import annotations

from torch import nn

from litstarter._engine.images.preprocess import RESAMPLING  # the filters the cache, infer and serve implement

PREFIX = "timm"


def data_config(model: nn.Module, in_channels: int) -> dict:
    """timm's resolved pretrained preprocessing, with ``mean``/``std`` for ``in_channels`` (one channel: the
    average of the RGB values)."""
    from timm.data import resolve_model_data_config

    cfg = resolve_model_data_config(model)
    mean, std = [float(v) for v in cfg["mean"]], [float(v) for v in cfg["std"]]
    if in_channels != len(mean):
        mean = [sum(mean) / len(mean)] * in_channels if in_channels == 1 else (mean * in_channels)[:in_channels]
        std = [sum(std) / len(std)] * in_channels if in_channels == 1 else (std * in_channels)[:in_channels]
    return {
        "mean": mean,
        "std": std,
        "input_size": [int(v) for v in cfg["input_size"][1:]],
        "interpolation": str(cfg.get("interpolation", "bilinear")),
        "crop_pct": float(cfg.get("crop_pct", 1.0)),
    }


def resize_of(backbone: str) -> dict | None:
    """``{"interpolation", "crop_pct"}`` of ``timm/<name>``'s pretrained config (``None``: not a timm name, timm
    missing, or no pretrained config); a filter the cache does not implement becomes ``bilinear``."""
    if not isinstance(backbone, str) or not backbone.startswith(f"{PREFIX}/"):
        return None
    try:
        import timm
    except ImportError:
        return None  # the backbone's build says how to install it
    cfg = timm.models.get_pretrained_cfg(backbone.removeprefix(f"{PREFIX}/"))
    if cfg is None:
        return None
    interpolation = cfg.interpolation if cfg.interpolation in RESAMPLING else "bilinear"
    return {"interpolation": interpolation, "crop_pct": float(cfg.crop_pct or 1.0)}
