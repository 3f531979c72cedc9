"""What a target kind decides, from the listing to the batch (``TargetKind``), and its defaults."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from ..images.splits import SourceFile


class TargetKind:
    """One kind of target: how a split's listed targets are stored, split, written and counted.

    A source file's ``target`` is what its layout listed, as plain JSON (it is in the cache manifest and the listing
    digest): a class index, a tuple of label names, a tuple of numbers. The arrays below are what :meth:`stack`
    makes of a split's targets, the cache stores (``<split>.targets.npy``) and the dataset serves row by row.
    """

    #: The kind's name: a data module's ``target_kind``, and a task's.
    name: ClassVar[str] = ""
    #: What one of the data's ``class_names`` is called in messages: a class, a label, a target.
    noun: ClassVar[str] = "class"
    #: How a split carved by the fractions is stratified, in the layout line.
    how: ClassVar[str] = "stratified"
    #: What is left for train once val and test are carved, in the layout line.
    rest: ClassVar[str] = "the rest"
    #: Whether each image has exactly one class (what class-balancing samplers and ``data.classes`` need).
    single_class: ClassVar[bool] = False
    #: Whether :meth:`strata` says which classes (labels) each image holds, one column per name (values' bands
    #: do not): ``inspect`` counts images per class by it.
    strata_are_classes: ClassVar[bool] = True
    #: The fewest names (classes, labels, target columns) the data must have.
    fewest: ClassVar[int] = 2
    #: How a split's targets are stored: ``stacked`` from the listing (:meth:`stack`, ``<split>.targets.npy``);
    #: ``pixels``, decoded with each image through its geometry into ``<split>.targets.u8`` ``(N, H, W)`` (a mask:
    #: :meth:`decode`); ``rows``, decoded so too into a variable number of rows per image (a set of boxes), stored
    #: ``(M, 1 + F)`` with the image's index first (:class:`~.rows.RaggedRows`).
    storage: ClassVar[str] = "stacked"
    #: The eval view's centre crop (a fraction of the stored size) where ``data.crop_pct`` is unset; ``None``: the
    #: data module's (ImageNet's 224/256).
    eval_crop: ClassVar[float | None] = None
    #: What of a split holds a class (an image, a mask's pixel, a box), in :meth:`empty_warning`.
    holder: ClassVar[str] = "image"
    #: Where to look when a class has none in the train split, appended to :meth:`empty_warning`.
    empty_hint: ClassVar[str] = ""

    @property
    def decoded(self) -> bool:
        """Whether each image's target goes through its image's geometry when the cache is built (:meth:`decode`)."""
        return self.storage != "stacked"

    def configured(self, root, names: list[str], settings: dict) -> TargetKind:
        """This kind for one data root: what decoding its targets needs (a mask's ignore index, its palette).
        Nothing by default: the kind as it is."""
        return self

    def params(self) -> dict:
        """What the cache's parameters record of :meth:`configured`'s settings (they change what is stored)."""
        return {}

    def decode(self, target, image_size: tuple[int, int], orientation: int, size: tuple[int, int]):
        """A :attr:`decoded` kind's target as the cache stores it beside its image: ``(array, None)`` or ``(None,
        reason)``; the array ``(H, W)`` (``pixels``) or ``(m, F)`` (``rows``). ``image_size``: the image file's
        ``(width, height)`` before its EXIF ``orientation``; ``size``: the cached ``(height, width)``."""
        raise NotImplementedError

    def stack(self, targets: Sequence, names: Sequence[str]) -> np.ndarray:
        """A split's listed targets, in order, as the ``(N, ...)`` array the cache stores."""
        raise NotImplementedError

    def carve(
        self,
        files: list[SourceFile],
        names: list[str],
        val_fraction: float,
        test_fraction: float,
        seed: int,
        where: str,
    ) -> dict[str, list[SourceFile]]:
        """``{split: files}`` by the fractions, stratified in this kind's terms and seeded; ``test`` only when
        ``test_fraction > 0``.

        Raises:
            BadInputError: too few images to give every split one (naming ``where``).
        """
        raise NotImplementedError

    def order(self, files: list[SourceFile]) -> list[SourceFile]:
        """A given split (split folders, a ``split`` column) in the order the cache stores it: by path."""
        return sorted(files, key=lambda f: os.fsencode(f.path))

    def strata(self, stored: np.ndarray) -> np.ndarray:
        """``(N, G)`` 0/1 groups that cv folds keep in proportion (one column per class, label or value band)."""
        raise NotImplementedError

    def strata_names(self, names: Sequence[str], stored: np.ndarray) -> list[str]:
        """What each column of :meth:`strata` is called in messages: the class (label) names."""
        return list(names)

    def text(self, row, names: Sequence[str]) -> str:
        """One stored target as a labels CSV cell writes it (cv's split files and out-of-fold predictions)."""
        raise NotImplementedError

    def column(self, names: Sequence[str]) -> list[str]:
        """The labels CSV columns :meth:`text` fills (one, unless a kind says otherwise)."""
        return ["label"]

    def cells(self, row, names: Sequence[str]) -> list[str]:
        """One stored target's cells under :meth:`column`."""
        return [self.text(row, names)]

    def valid(self, target, k: int) -> bool:
        """Whether a manifest's listed ``target`` is one of this kind over ``k`` names (a hand edit is not)."""
        raise NotImplementedError

    def empty(self, stored: np.ndarray, names: Sequence[str]) -> list[str]:
        """The names no image of ``stored`` (the train split, after bad files were skipped) has; none by default."""
        return []

    def empty_warning(self, stored: np.ndarray, names: Sequence[str]) -> str | None:
        """The line that names the classes (labels) :meth:`empty` finds in ``stored``, the train split: the fit
        cannot learn them and their scores say nothing; ``None`` when every one is held."""
        missing = self.empty(stored, names)
        if not missing:
            return None
        plural = "classes" if self.noun == "class" else f"{self.noun}s"
        return (
            f"{plural} {missing} have no {self.holder} in the train split: the fit cannot learn them and their"
            f" scores are empty{self.empty_hint}"
        )

    def class_counts(self, stored: np.ndarray, k: int) -> np.ndarray:
        """``(k,)`` images per class (per label) of ``stored``: inverse-frequency weights and samplers."""
        raise NotImplementedError

    def summary(self, by_split: dict[str, np.ndarray], names: Sequence[str]) -> dict:
        """What ``inspect`` reports of the targets beyond images per class, as report entries (JSON): nothing by
        default."""
        return {}

    def summary_lines(self, summary: dict) -> list[str]:
        """:meth:`summary`'s entries as lines of ``inspect``'s table."""
        return []
