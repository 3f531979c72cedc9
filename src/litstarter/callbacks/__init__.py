"""Small callbacks for what no stock Lightning callback does, listed by name in a config. Each does one thing."""

from litstarter.callbacks.freeze_backbone import FreezeBackbone
from litstarter.callbacks.plot_confusion_matrix import PlotConfusionMatrix
from litstarter.callbacks.reseed_each_epoch import ReseedEachEpoch
from litstarter.callbacks.stop_on_non_finite_loss import NonFiniteLossError, StopOnNonFiniteLoss
from litstarter.callbacks.write_test_metrics import WriteTestMetrics

__all__ = ["FreezeBackbone", "NonFiniteLossError", "PlotConfusionMatrix", "ReseedEachEpoch", "StopOnNonFiniteLoss"]
__all__ += ["WriteTestMetrics"]
