"""An image folder cached at the images' own size, for training on windows of it (``data.tiles``).

:class:`TiledImageFolder` is the folder of :class:`~.folder.CachedImageFolder` (the same listing, split and checks)
with another geometry: ``image_size`` is the window, and the cache stores each image at its own size (resized down past
``max_side`` only) padded to the largest (:mod:`.own_size`), instead of resized to cover ``image_size`` and cropped.
"""

from __future__ import annotations

import logging

from litstarter.errors import UsageError

from ..tiles import Tiling
from .channels import channels_for
from .folder import CachedImageFolder
from .own_size import read_own_sizes, stored_size

log = logging.getLogger(__name__)


class TiledImageFolder(CachedImageFolder):
    """:class:`~.folder.CachedImageFolder` at the images' own size: ``image_size`` the window of ``tiling``,
    ``resize_size`` the stored (padded) size.

    Args:
        root: The image folder.
        labels: A labels file instead of folders, or ``None``.
        image_size: Not used: the window is the network's input (``data.image_size`` is then not read).
        args: The rest of :class:`~.folder.CachedImageFolder`'s arguments, in its order.
        tiling: The windows (``data.tiles``).
        kwargs: :class:`~.folder.CachedImageFolder`'s, by name.

    Raises:
        UsageError: targets that are not masks or boxes (one line).
    """

    def __init__(self, root, labels=None, image_size=None, *args, tiling: Tiling, **kwargs) -> None:
        self.tiling = tiling
        self._own_sizes: list[tuple[int, int]] | None = None
        super().__init__(root, labels, tiling.size, *args, **kwargs)
        if not self.kind.decoded:
            raise UsageError(
                f"data.tiles trains on windows of images whose targets are masks or boxes; data.root '{self.root}'"
                f" holds {self.target_kind} targets: drop data.tiles (data.image_size sets the size)"
            )
        if self._own_sizes is None:
            self._read_headers(channels=False)
        self.resize_size = stored_size(self._own_sizes, tiling.size)
        largest = max((max(h, w) for h, w in self._own_sizes), default=0)
        log.info(
            "data.tiles: windows of %s px overlapping by %d px; images kept at their own size (up to %d px a side,"
            " the largest %d px), stored padded to %s",
            "x".join(map(str, tiling.size)),
            tiling.overlap,
            tiling.max_side,
            largest,
            "x".join(map(str, self.resize_size)),
        )

    def _resolve_auto(self, channels: bool, image_size: bool) -> None:
        """``channels: auto`` from the same pass over the headers that reads the images' own sizes."""
        self._read_headers(channels)

    def _read_headers(self, channels: bool) -> None:
        listing = self.listing()
        paths = (self.root / f.path for files in listing.sources.values() for f in files)
        modes, self._own_sizes = read_own_sizes(paths, self.tiling.max_side)
        if channels:
            self.channels, reason = channels_for(modes)
            log.info("data.channels: auto -> %d: %s", self.channels, reason)

    def cache_params(self) -> dict:
        """The folder's parameters, and the own-size geometry (``max_side``; the stored size is ``resize_size``)."""
        return {**super().cache_params(), "tiles": {"max_side": self.tiling.max_side, "fit": "own size, padded"}}
