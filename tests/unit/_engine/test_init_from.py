"""init_from and weights: what fits loads, the head is kept or replaced (and the reason is the true one), scalar
buffers are no evidence of a fit, and files that do not fit are named."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torchvision

from litstarter._engine.checkpoints import CheckpointError
from litstarter._engine.init_from import load_matching_weights
from litstarter.errors import UsageError
from litstarter.models.classifier import build_classifier
from litstarter.tasks.classification import ImageClassifier


def _net(widths: list[int], num_classes: int = 10):
    return build_classifier(
        {"backbone": "small_cnn", "backbone_kwargs": {"widths": widths}, "num_classes": num_classes, "in_channels": 1}
    )


def _weights(tmp_path: Path, net) -> Path:
    path = tmp_path / "weights.pt"
    torch.save(net.state_dict(), path)
    return path


def test_only_scalar_buffers_in_common_is_an_error_not_four_tensors_loaded(tmp_path: Path) -> None:
    source = _weights(tmp_path, _net([8, 16]))
    target = _net([32, 64, 128])
    before = {k: v.clone() for k, v in target.state_dict().items()}
    with pytest.raises(CheckpointError, match=r"No weight tensor of init_from .*0 tensors loaded \(0 backbone"):
        load_matching_weights(target, source, [str(i) for i in range(10)])
    assert all(torch.equal(before[k], v) for k, v in target.state_dict().items())  # nothing was loaded


def test_head_replaced_names_the_true_reason(tmp_path: Path) -> None:
    names = [str(i) for i in range(10)]
    # Same classes, other feature width: the head cannot load because the backbones differ, not the classes.
    source = _weights(tmp_path, _net([8, 16, 32]))
    target = _net([8, 16, 64])
    with pytest.warns(UserWarning, match="only part of the backbone loaded"):
        report = load_matching_weights(target, source, names)
    assert "features" in report.head_replaced and "num_classes" not in report.head_replaced
    # Other number of classes: that is the reason given, with both counts.
    source = _weights(tmp_path, _net([8, 16, 32], num_classes=5))
    report = load_matching_weights(_net([8, 16, 32]), source, names)
    assert report.head_replaced == "num_classes differs (checkpoint 5, this run 10)"
    assert report.backbone_matched and not report.mismatched


def _checkpoint(tmp_path: Path, model: ImageClassifier, name: str = "source.ckpt") -> Path:
    """A file laid out like a Lightning checkpoint of ours (weights + the hyper-parameters init_from reads)."""
    path = tmp_path / name
    hparams = {"backbone": model.hparams.backbone, "class_names": model.class_names}
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": hparams}, path)
    return path


def test_init_from_loads_the_backbone_and_keeps_or_replaces_the_head(tmp_path: Path) -> None:
    torch.manual_seed(0)
    source = ImageClassifier(num_classes=3, in_channels=1, class_names=["a", "b", "c"])
    with torch.no_grad():
        source.net.mean.fill_(99.0)
    path = _checkpoint(tmp_path, source)

    same = ImageClassifier(num_classes=3, in_channels=1, class_names=["a", "b", "c"], init_from=str(path))
    report = same.load_initial_weights()
    assert report.head_replaced is None and torch.equal(same.net.head.weight, source.net.head.weight)
    assert not torch.equal(same.net.mean, source.net.mean)  # normalisation comes from this run's data

    for other in (
        ImageClassifier(num_classes=3, in_channels=1, class_names=["x", "y", "z"], init_from=str(path)),
        ImageClassifier(num_classes=5, in_channels=1, init_from=str(path)),
    ):
        fresh_head = other.net.head.weight.detach().clone()
        report = other.load_initial_weights()
        assert report.head_replaced and torch.equal(other.net.head.weight, fresh_head)
        for key, value in source.net.backbone.state_dict().items():
            assert torch.equal(other.net.backbone.state_dict()[key], value), key

    torch.save(source.net.backbone.state_dict(), tmp_path / "backbone.pt")  # a bare backbone state_dict
    bare = ImageClassifier(num_classes=3, in_channels=1, init_from=str(tmp_path / "backbone.pt"))
    assert bare.load_initial_weights().head_replaced == "the file has no head"
    assert torch.equal(bare.net.backbone.stages[0][0][0].weight, source.net.backbone.stages[0][0][0].weight)


def test_init_from_a_partly_fitting_backbone_loads_what_fits_and_warns(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path, ImageClassifier(num_classes=3, in_channels=1))
    wider = ImageClassifier(
        num_classes=3, in_channels=1, backbone_kwargs={"widths": [32, 64, 256]}, init_from=str(path)
    )
    with pytest.warns(UserWarning, match="only part of the backbone loaded"):
        report = wider.load_initial_weights()
    assert report.backbone_matched and report.mismatched


def test_init_from_an_unrelated_file_is_a_clear_error(tmp_path: Path) -> None:
    source = _checkpoint(tmp_path, ImageClassifier(num_classes=3, in_channels=1))  # small_cnn
    other_arch = ImageClassifier(backbone="resnet18", num_classes=3, in_channels=1, init_from=str(source))
    with pytest.raises(
        CheckpointError, match=r"No weight tensor of init_from .*trained with backbone 'small_cnn'.*model.backbone"
    ):
        other_arch.load_initial_weights()
    del other_arch

    (tmp_path / "notes.txt").write_text("not a checkpoint")
    for path, match in [
        (tmp_path / "notes.txt", "cannot read .*notes.txt as a torch file: it is neither"),
        (tmp_path / "list.pt", "list.pt is neither a litstarter checkpoint .* nor a state_dict"),
        (tmp_path / "missing.ckpt", "checkpoint not found: .*missing.ckpt"),
    ]:
        if path.name == "list.pt":
            torch.save([torch.zeros(2)], path)
        model = ImageClassifier(num_classes=3, in_channels=1, init_from=str(path))  # not read yet: no error
        with pytest.raises((CheckpointError, UsageError), match=match):
            model.load_initial_weights()


def test_weights_are_checked_at_init_and_loaded_when_fitting_starts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"model.weights: unknown weights 'IMAGENET1K_V9'.*'IMAGENET1K_V1'"):
        ImageClassifier(backbone="mobilenet_v3_small", weights="IMAGENET1K_V9")
    with pytest.raises(ValueError, match="model.weights: backbone 'small_cnn' has no pretrained weights"):
        ImageClassifier(backbone="small_cnn", weights="IMAGENET1K_V1")
    path = tmp_path / "mobilenet.pth"
    model = ImageClassifier(backbone="mobilenet_v3_small", num_classes=2, in_channels=1, weights=str(path))
    reference = torchvision.models.mobilenet_v3_small().state_dict()
    torch.save(reference, path)  # only needed once loading starts
    model.load_initial_weights()
    stem = model.net.backbone.features[0][0].weight
    assert torch.equal(stem, reference["features.0.0.weight"].sum(dim=1, keepdim=True))
