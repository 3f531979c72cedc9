"""The engine: infrastructure that keeps the project honest. You should not need to read this.

It imports only itself (relatively, as one tree) and never the project or an extra.

* ``run/``: what every ``fit``/``validate``/``test``/``predict`` gets around LightningCLI (``run/cli.py``, the
  start): checks before a run, claimed run folders, one folder for every logger, trackers, quiet fallbacks;
* ``images/``: the image-folder subsystem: listing, layouts, the labels CSV, splits, the uint8 cache and its
  manifest, channels, leakage, preprocessing shared with inference;
* ``augment/``: the kernels of the fast default augmentation;
* ``config_schema/``: a JSON schema of a LightningCLI config, for editors (``litstarter schema`` writes one);
* ``errors.py`` (one line per user mistake), ``atomic_io.py``, ``cores.py``, ``leftovers.py``, ``plots.py``;
* checkpoint plumbing: ``checkpoints.py`` (safe loading, ``torch.compile``'s key prefix), ``init_from.py``,
  ``pretrained.py``, ``trust.py`` (no class a file names is imported without trust), ``schedulers.py``,
  ``batch_plan.py``.
"""
