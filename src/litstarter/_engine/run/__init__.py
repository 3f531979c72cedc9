"""Run handling: everything a run gets around LightningCLI. Start at ``cli.py`` (``RunCLI``), which lists the steps."""
