"""The fast path behind the data seams. You can ignore this package.

What is here, and why it is clever rather than plain:

* :mod:`.augment`: the default augmentation (:class:`~.augment.FastAugmentation`): every random choice drawn
  from the sample's seed with SplitMix64, vectorised over the batch, every crop bilinear-sampled in one
  ``grid_sample``. A stock torchvision v2 transform gives the same reproducibility, per sample and slower.
* :mod:`.seeds`: the ``(index, seed)`` items the samplers yield, so an epoch's augmentation is a pure function of
  ``(seed, epoch)`` and a resumed run replays exactly.
* :mod:`.heap` and :mod:`.workers`: glibc allocator tuning, applied once per loader process at its start.

To swap the augmentation, set ``data.augmentation`` (see :mod:`litstarter.data.augmentation`); nothing here needs
to change.
"""
