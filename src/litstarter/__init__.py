"""litstarter: a PyTorch Lightning image-classification template."""

__version__ = "0.1.0"
