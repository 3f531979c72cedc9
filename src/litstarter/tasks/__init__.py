"""The tasks: one LightningModule per task over a shared base (``base.py``), each picked by its config
(``configs/task/<name>.yaml``), and each task's answers (``<name>_answers.py``: torch-free, for ``infer`` and
``serve``). This file imports nothing, so reading a task's answers never loads torch."""
