"""A JSON schema of a LightningCLI config, for editors to complete and check YAML files. ``document.py`` starts it."""
