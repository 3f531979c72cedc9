"""The image-folder subsystem: ``folder.py`` (``CachedImageFolder``) lists, splits and caches a folder."""
