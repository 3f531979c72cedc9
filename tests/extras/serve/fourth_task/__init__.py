"""A fourth task, as a user adds one: the files ``test_task_seam.py`` drops into a copy of the repository."""
