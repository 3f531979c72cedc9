"""``litstarter inspect``: what is in an image folder, before any training, from the image cache."""

COMMANDS = {"inspect": ("command", "report an image folder: classes, splits, sizes, bad files, leaks")}
NEEDS: dict[str, tuple[str, ...]] = {}
