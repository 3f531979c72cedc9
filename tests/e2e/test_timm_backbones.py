"""timm backbones through ``litstarter fit``: two families at the digits' 8x8 with the fine-tuning and memory
switches, layer decay's learning rates over a whole schedule, ConvNeXt from a local weights file on photos, and the
one-line refusals (a size under the model's minimum, a pretrained request offline). All of them are the session's
``timm_runs``, one subprocess."""

from __future__ import annotations

import re

import pytest
import torch

from tests.helpers import assert_refused, tensorboard_events

pytest.importorskip("timm")


def _output(result: dict) -> str:
    return result["stdout"] + result["stderr"]


def test_two_families_train_at_8x8_with_the_fine_tuning_and_memory_switches(timm_runs) -> None:
    for name in ("resnet", "mobilenetv3", "resnet_init"):
        assert (timm_runs[name]["run"] / "checkpoints" / "last.ckpt").is_file(), name
    resnet = _output(timm_runs["resnet"])  # the first case: Lightning's own lines reach its output
    assert "frozen (eval mode, no gradients)" in resnet and "unfrozen and training" in resnet
    start, after = (torch.load(timm_runs[n]["run"] / "checkpoints" / "last.ckpt", weights_only=True)["state_dict"]
                    for n in ("resnet", "resnet_init"))  # fmt: skip
    key = "net.backbone.model.layer3.0.conv1.weight"  # two steps from init_from's tensors, not a fresh draw
    similarity = torch.nn.functional.cosine_similarity(start[key].flatten(), after[key].flatten(), dim=0)
    assert similarity > 0.8 and not torch.equal(start[key], after[key])


def test_layer_decay_keeps_its_factor_from_warmup_to_the_end(timm_runs) -> None:
    result = timm_runs["mobilenetv3"]
    events = tensorboard_events(result["run"])
    tags = [t for t in events.Tags()["scalars"] if t.startswith("lr-AdamW/")]
    layers = {re.match(r"lr-AdamW/(backbone_layer_\d+)", t).group(1) for t in tags if "backbone_layer_" in t}
    first, head = events.Scalars("lr-AdamW/backbone_layer_00"), events.Scalars("lr-AdamW/head")
    assert len(layers) > 3 and len(first) == len(head) == 6  # every step of 2 epochs x 3 batches
    expected = 0.5 ** len(layers)  # the head is one more layer on top of the backbone's
    for f, h in zip(first, head, strict=True):
        assert f.step == h.step and f.value == pytest.approx(h.value * expected, rel=1e-6)
    rates = [h.value for h in head]
    assert rates[1] > rates[0] and rates[-1] < max(rates)  # warmup up, then the cosine down
    line = next(line for line in _output(result).splitlines() if "layer decay:" in line)
    assert line.count("backbone_layer_") == 2 and "head" in line  # the first, a middle one and the head


def test_convnext_trains_on_photos_from_a_local_file_with_its_pretrained_normalisation(timm_runs) -> None:
    import timm

    out = _output(timm_runs["convnext"])
    assert "loaded" in out and "the pretrained config's (pretrained weights expect it) wins" in out, out[-3000:]
    assert "data.image_size [64, 64] differs from the pretrained config's input size [224, 224]" in out
    ckpt = torch.load(timm_runs["convnext"]["run"] / "checkpoints" / "last.ckpt", weights_only=True)
    expected = timm.data.resolve_model_data_config(timm.create_model("convnext_atto"))["mean"]
    assert ckpt["state_dict"]["net.mean"].flatten().tolist() == pytest.approx([255 * m for m in expected])
    source = torch.load(timm_runs["weights"], weights_only=True)
    key = "stages.1.blocks.0.conv_dw.weight"  # two optimiser steps from the file's values, not a fresh draw
    trained, loaded = ckpt["state_dict"][f"net.backbone.model.{key}"].flatten(), source[key].flatten()
    assert torch.nn.functional.cosine_similarity(trained, loaded, dim=0) > 0.8
    assert "head.fc.weight" in source and "net.backbone.model.head.fc.weight" not in ckpt["state_dict"]


def test_a_size_under_the_minimum_and_an_offline_download_are_refused_in_one_line(timm_runs) -> None:
    message = assert_refused(timm_runs["too_small"], 2, "timm/convnext_atto", "data.image_size is [8, 8]")
    assert re.search(r"at least (\d+)x\1", message), message
    assert_refused(timm_runs["offline"], 2, "timm/resnet10t", "HF_HUB_OFFLINE", "model.weights")
