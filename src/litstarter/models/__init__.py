"""Plain ``nn.Module`` models. Nothing here imports Lightning, so models test and export on their own.

A backbone of your own is registered by name (:func:`register_backbone`) or named by its class path in a config;
a head of your own subclasses :class:`ImageNetwork` (the input's normalisation) or one of the task networks.
"""

from litstarter.models import small_cnn as _small_cnn  # noqa: F401  (registers "small_cnn")
from litstarter.models import timm_backbones as _timm_backbones  # noqa: F401  (timm/<name>; imports timm lazily)
from litstarter.models import torchvision_backbones as _torchvision_backbones  # noqa: F401  (resnet18, ...)
from litstarter.models.classifier import Classifier
from litstarter.models.detector import Detector
from litstarter.models.network import ImageNetwork
from litstarter.models.registry import (
    BackboneError,
    check_weights,
    create_backbone,
    list_backbones,
    list_weights,
    register_backbone,
    register_backbone_prefix,
)
from litstarter.models.segmenter import Segmenter
from litstarter.models.stages import read_stages, stage_channels

__all__ = [
    "BackboneError",
    "Classifier",
    "Detector",
    "ImageNetwork",
    "Segmenter",
    "check_weights",
    "create_backbone",
    "list_backbones",
    "list_weights",
    "read_stages",
    "register_backbone",
    "register_backbone_prefix",
    "stage_channels",
]
