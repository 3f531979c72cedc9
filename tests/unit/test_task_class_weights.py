"""``model.class_weights``: inverse-frequency loss weights from the data module, carried by checkpoints."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import pytest
import torch

from litstarter.data import ImageFolderDataModule
from litstarter.losses import inverse_frequency_weights
from litstarter.tasks.classification import ImageClassifier
from tests.helpers import make_image_folder


def test_auto_weights_the_rarer_class_more_and_checkpoints_carry_the_weights(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "root", {"common": 40, "middle": 20, "rare": 5}, size=(12, 12))
    dm = ImageFolderDataModule(
        str(root), image_size=8, val_fraction=0.2, test_fraction=0.0, batch_size=16, num_workers=0,
        cache_dir=str(tmp_path / "cache"),
    )  # fmt: skip
    model = ImageClassifier(num_classes=3, in_channels=3, image_size=(8, 8), class_weights="auto",
                            backbone_kwargs={"widths": (8,)})  # fmt: skip
    trainer = L.Trainer(
        max_steps=1, limit_val_batches=0, accelerator="cpu", logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
    )  # fmt: skip
    trainer.fit(model, dm)
    counts = dm.class_counts()
    assert counts.tolist() == [32, 16, 4]  # 80% of 40 / 20 / 5 in train
    weight = model.criterion.weight
    assert weight[2] > weight[1] > weight[0]  # rarer class -> larger weight
    torch.testing.assert_close(weight, torch.tensor([52 / 96, 52 / 48, 52 / 12]))  # total / (K * count)
    # A buffer of the loss: in the state_dict, so every checkpoint carries the weights that were used.
    path = tmp_path / "weights.pt"
    torch.save(model.state_dict(), path)
    fresh = ImageClassifier(num_classes=3, in_channels=3, image_size=(8, 8), class_weights="auto",
                            backbone_kwargs={"widths": (8,)})  # fmt: skip
    torch.testing.assert_close(fresh.criterion.weight, torch.ones(3))
    fresh.load_state_dict(torch.load(path, weights_only=True))
    torch.testing.assert_close(fresh.criterion.weight, weight)


def test_balanced_counts_give_unit_weights_and_an_empty_class_is_named() -> None:
    torch.testing.assert_close(inverse_frequency_weights([7, 7, 7], ["a", "b", "c"]), torch.ones(3))
    with pytest.raises(ValueError, match=r"no training samples for classes \['b'\]"):
        inverse_frequency_weights([5, 0, 3], ["a", "b", "c"])


def test_explicit_weights_are_validated_and_used() -> None:
    model = ImageClassifier(num_classes=2, class_weights=[1.0, 3.0])
    torch.testing.assert_close(model.criterion.weight, torch.tensor([1.0, 3.0]))
    with pytest.raises(ValueError, match="model.class_weights must be 2 positive numbers"):
        ImageClassifier(num_classes=2, class_weights=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="model.class_weights must be 'auto'"):
        ImageClassifier(num_classes=2, class_weights="inverse")
    assert ImageClassifier(num_classes=2).criterion.weight is None  # unweighted by default: no extra buffer
