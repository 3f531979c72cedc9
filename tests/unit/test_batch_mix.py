"""MixUp/CutMix on a batch: replayable from (seed, epoch, step), blind to the global RNG, pairing across classes
even in a class-sorted batch; the task's loss on it is soft-target cross-entropy with label smoothing."""

from __future__ import annotations

import logging

import pytest
import torch

from litstarter.batch_mix import BatchMix
from litstarter.errors import UsageError
from litstarter.tasks.classification import ImageClassifier

K = 10


def batch(n: int = 32, sorted_by_class: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (n, 1, 8, 8), dtype=torch.uint8, generator=generator)
    labels = torch.arange(n) * K // n if sorted_by_class else torch.randint(0, K, (n,), generator=generator)
    return images, labels


def test_the_same_epoch_and_step_give_bit_identical_batches_and_leave_the_global_rng_alone() -> None:
    mix, (images, labels) = BatchMix(K, 0.8, 1.0, None), batch()
    before = torch.get_rng_state()
    first, again = mix(images, labels, epoch=1, step=7), mix(images, labels, epoch=1, step=7)
    assert torch.equal(torch.get_rng_state(), before)  # dropout's stream is untouched
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    other = mix(images, labels, epoch=1, step=8)
    assert not torch.equal(first[0], other[0])
    assert first[1].shape == (len(labels), K) and torch.allclose(first[1].sum(-1), torch.ones(len(labels)))


def test_a_class_sorted_batch_is_shuffled_before_pairing() -> None:
    """A balanced sampler's batch comes class by class: mixing neighbours would mostly mix a class with itself."""
    images, labels = batch(sorted_by_class=True)
    _, targets = BatchMix(K, 0.8, 0.0, None)(images, labels, epoch=0, step=0)
    across = ((targets > 0).sum(-1) == 2).float().mean()
    assert across > 0.6, across  # neighbours in the sorted batch would give 9 of 32


def test_mixing_stops_at_the_off_epoch_and_says_so_once(caplog) -> None:
    mix, (images, labels) = BatchMix(K, 0.8, 1.0, off_after_epoch=2), batch()
    with caplog.at_level(logging.INFO, logger="litstarter"):
        assert mix(images, labels, epoch=1, step=0)[1].ndim == 2
        for step in (0, 1):
            out_images, out_labels = mix(images, labels, epoch=2, step=step)
            assert out_images is images and out_labels is labels
    assert caplog.text.count("MixUp/CutMix off from epoch 2") == 1
    with pytest.raises(UsageError, match="model.mixup_alpha"):
        BatchMix(K, -0.1, 0.0, None)


def test_the_training_loss_is_soft_target_cross_entropy_with_smoothing_on_the_mixed_batch() -> None:
    smoothing = 0.1
    task = ImageClassifier(num_classes=K, in_channels=1, image_size=(8, 8), mixup_alpha=0.8, cutmix_alpha=1.0,
                           label_smoothing=smoothing)  # fmt: skip
    task.log = lambda *args, **kwargs: None  # no trainer to log to
    images, labels = batch()
    loss = task.training_step((images, labels), 0)
    mixed, targets = task.batch_mix(images, labels, epoch=0, step=0)  # the same draws (epoch 0, step 0)
    log_probs = task(mixed).log_softmax(dim=-1)
    by_hand = -(((1 - smoothing) * targets + smoothing / K) * log_probs).sum(dim=-1).mean()
    torch.testing.assert_close(loss, by_hand)
    dominant = (log_probs.argmax(-1) == targets.argmax(-1)).float().mean()
    torch.testing.assert_close(task.train_metrics.compute()["train/acc"], dominant)  # on the dominant label
