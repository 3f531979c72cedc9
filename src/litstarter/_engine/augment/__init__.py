"""The kernels of ``FastAugmentation`` (``data/augmentation.py``), batched, drawn from per-sample seeds."""
