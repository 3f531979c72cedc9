"""Optional features, each a folder; one that needs packages training does not has a pip extra of its name.

Each extra's ``__init__.py`` declares, and holds nothing else (the entry point reads it to list the subcommands):

* ``COMMANDS``: subcommand -> (module of this folder whose ``main(argv)`` runs it, one-line help);
* ``NEEDS``: subcommand -> the packages it cannot start without, which its pyproject extra installs.

An extra may import the project and the engine; another extra only where ``tests/test_import_graph.py`` declares it.
"""
