"""Small callbacks for what no stock Lightning callback does. Each does one thing, named after it."""

from litstarter.callbacks.write_test_metrics import WriteTestMetrics

__all__ = ["WriteTestMetrics"]
