"""``litstarter cv``: k-fold cross-validation whose folds are ordinary ``litstarter fit`` runs (see ``command.py``)."""

COMMANDS = {"cv": ("command", "k-fold cross-validation: stratified, duplicate-safe folds, each an ordinary fit")}
NEEDS: dict[str, tuple[str, ...]] = {}
