"""Optional features, each a folder that a project deletes whole (``make drop-extra NAME=<extra>``).

Each extra's ``__init__.py`` declares, and holds nothing else (the entry point reads it to list the subcommands):

* ``COMMANDS``: subcommand -> (module of this folder whose ``main(argv)`` runs it, one-line help);
* ``NEEDS``: subcommand -> the packages it cannot start without, which its pyproject extra installs;
* ``PARTS``: what else belongs to it, from the repository root (tests, docs page, benchmarks, examples, configs).

An extra may import the project and the engine; another extra only where ``tests/test_import_graph.py`` declares it.
"""
