"""``litstarter inspect``: what is in an image folder, before any training, from the image cache."""

COMMANDS = {"inspect": ("command", "report an image folder: classes, splits, sizes, bad files, leaks")}
NEEDS: dict[str, tuple[str, ...]] = {}
PARTS = ("tests/extras/inspect", "docs/inspect.md", "benchmarks/inspect_checks.py")
