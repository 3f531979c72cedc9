"""litstarter: a PyTorch Lightning image library (classification, multi-label, regression, segmentation, detection)
that a project installs, with the ``litstarter`` command line over it.

Its public API, the names a project may import, is listed on one page (``docs/api.md``) and versioned by semver;
everything else (``litstarter._engine``, the extras' command modules, the submodules of the public packages) may
change in any release.
"""

__all__ = ["__version__"]

__version__ = "0.2.0"
