"""``litstarter doctor``: verify the install in three layers (versions, accelerator, a real computation)."""

COMMANDS = {"doctor": ("command", "verify the install: versions, accelerator, a real computation per device")}
NEEDS: dict[str, tuple[str, ...]] = {}
