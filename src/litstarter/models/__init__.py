"""Plain ``nn.Module`` models. Nothing here imports Lightning, so models test and export on their own."""

from litstarter.models import small_cnn as _small_cnn  # noqa: F401  (registers "small_cnn")
from litstarter.models import timm_backbones as _timm_backbones  # noqa: F401  (timm/<name>; imports timm lazily)
from litstarter.models import torchvision_backbones as _torchvision_backbones  # noqa: F401  (resnet18, ...)
from litstarter.models.classifier import Classifier
from litstarter.models.registry import check_weights, create_backbone, list_backbones, list_weights, register_backbone

__all__ = ["Classifier", "check_weights", "create_backbone", "list_backbones", "list_weights", "register_backbone"]
