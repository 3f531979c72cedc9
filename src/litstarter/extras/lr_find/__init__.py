"""``litstarter lr-find``: Lightning's learning-rate range test over the same config stack as ``fit``."""

COMMANDS = {"lr-find": ("command", "sweep the learning rate over a few steps; write the curve and a config delta")}
NEEDS: dict[str, tuple[str, ...]] = {}
