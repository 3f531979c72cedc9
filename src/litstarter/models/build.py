"""Any of our networks from a checkpoint's architecture: a classifier, a segmenter or a detector."""

from __future__ import annotations

from collections.abc import Mapping

from litstarter.models.classifier import build_classifier
from litstarter.models.detector import DETECTOR_KEY, build_detector
from litstarter.models.network import DECODER_KEY, ImageNetwork
from litstarter.models.segmenter import build_segmenter


def build_network(architecture: Mapping, trust_model: bool = True) -> ImageNetwork:
    """An untrained network shaped as ``architecture`` says (``litstarter.models.network.architecture_of``): a
    :class:`~litstarter.models.segmenter.Segmenter` where it has ``decoder_channels``, a
    :class:`~litstarter.models.detector.Detector` where it has ``detector``, else a
    :class:`~litstarter.models.classifier.Classifier`. Every task builds ``self.net`` with it, so a checkpoint
    rebuilds exactly the trained network. ``trust_model``: allow a backbone class from outside this package (loaders
    of files pass the user's choice)."""
    if DECODER_KEY in architecture:
        return build_segmenter(architecture, trust_model)
    if DETECTOR_KEY in architecture:
        return build_detector(architecture, trust_model)
    return build_classifier(architecture, trust_model)
