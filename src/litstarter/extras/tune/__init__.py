"""``litstarter tune``: Optuna studies whose trials are ordinary ``litstarter fit`` runs (see ``command.py``)."""

COMMANDS = {"tune": ("command", "search hyperparameters with Optuna; each trial is a fit in its own folder")}
NEEDS = {"tune": ("optuna", "optuna_integration")}
