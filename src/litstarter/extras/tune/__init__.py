"""``litstarter tune``: Optuna studies whose trials are ordinary ``litstarter fit`` runs (see ``command.py``)."""

from litstarter.extras.tune.command import main

__all__ = ["main"]
