"""Small callbacks for what no stock Lightning callback does. Each does one thing, named after it."""

from litstarter._engine.run.check_checkpoints_written import CheckCheckpointsWritten
from litstarter._engine.run.share_run_version import ShareRunVersion
from litstarter.callbacks.freeze_backbone import FreezeBackbone
from litstarter.callbacks.plot_confusion_matrix import PlotConfusionMatrix
from litstarter.callbacks.reseed_each_epoch import ReseedEachEpoch
from litstarter.callbacks.stop_on_non_finite_loss import NonFiniteLossError, StopOnNonFiniteLoss
from litstarter.callbacks.write_test_metrics import WriteTestMetrics

__all__ = [
    "CheckCheckpointsWritten",
    "FreezeBackbone",
    "NonFiniteLossError",
    "PlotConfusionMatrix",
    "ReseedEachEpoch",
    "ShareRunVersion",
    "StopOnNonFiniteLoss",
    "WriteTestMetrics",
]
