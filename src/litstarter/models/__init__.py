"""Plain ``nn.Module`` models. Nothing here imports Lightning, so models test and export on their own."""

from litstarter.models import small_cnn as _small_cnn  # noqa: F401  (registers "small_cnn")
from litstarter.models.classifier import Classifier
from litstarter.models.registry import create_backbone, list_backbones, register_backbone

__all__ = ["Classifier", "create_backbone", "list_backbones", "register_backbone"]
