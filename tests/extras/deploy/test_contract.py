"""The model.json contract: round-trips, names what is wrong, and records the stored size."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from litstarter.extras.deploy.contract import ContractError, ModelContract, read_sidecar

HPARAMS = {
    "image_size": (16, 16),
    "in_channels": 3,
    "num_classes": 3,
    "class_names": ["a", "b", "c"],
    "backbone": "small_cnn",
    "backbone_kwargs": None,
    "dropout": 0.0,
}


def test_round_trip_through_json():
    contract = ModelContract.from_hparams({**HPARAMS, "resize_size": (18, 18)}, [0.5] * 3, [0.25] * 3)
    assert contract.resize_size == (18, 18)
    assert ModelContract.from_json(json.dumps(contract.to_dict())) == contract
    assert contract.to_dict()["input"]["dtype"] == "uint8"


def test_stored_size_must_be_known():
    with pytest.raises(ContractError, match="resize_size"):
        ModelContract.from_hparams(HPARAMS, [0.5] * 3, [0.25] * 3)  # a checkpoint that never recorded it
    # resize_size: null is documented as "stored at image_size".
    assert ModelContract.from_hparams({**HPARAMS, "resize_size": None}, [0.5] * 3, [0.25] * 3).resize_size == (16, 16)


def test_malformed_sidecar_names_file_and_key(tmp_path):
    contract = ModelContract.from_hparams({**HPARAMS, "resize_size": (18, 18)}, [0.5] * 3, [0.25] * 3)
    data = contract.to_dict()
    del data["preprocessing"]["resize_size"]
    (tmp_path / "model.json").write_text(json.dumps(data))
    with pytest.raises(ContractError, match=r"model\.json: missing or malformed key 'resize_size'"):
        read_sidecar(tmp_path / "model.onnx")


@pytest.mark.parametrize(
    ("section", "key", "value", "named"),
    [
        ("input", "shape", ["batch", 2, 16, 16], "channels must be 1 or 3, got 2"),
        ("preprocessing", "resize_size", [8, 8], "resize_size [8, 8] is smaller than image_size [16, 16]"),
        ("preprocessing", "image_size", [0, 16], "image size must be an int or [height, width] of positive ints"),
        ("normalization", "mean", [0.5], "mean/std need 3 values each"),
        ("input", "shape", ["batch", "three", 16, 16], "invalid literal for int()"),
        (
            "preprocessing",
            "resize",
            {"size": [20, 20]},
            "preprocessing.resize.size is [20, 20] but preprocessing.resize_size is [18, 18]",
        ),
        (
            "preprocessing",
            "resize",
            {"interpolation": "lanczos"},
            "interpolation is 'lanczos'; this litstarter resizes with bilinear, bicubic only",
        ),
    ],
)
def test_bad_value_in_sidecar_names_the_file(tmp_path, section, key, value, named):
    data = ModelContract.from_hparams({**HPARAMS, "resize_size": (18, 18)}, [0.5] * 3, [0.25] * 3).to_dict()
    data[section][key] = value
    sidecar = tmp_path / "model.json"
    sidecar.write_text(json.dumps(data))
    with pytest.raises(ContractError) as raised:
        read_sidecar(tmp_path / "model.onnx")
    assert str(raised.value).startswith(f"{sidecar}: ") and named in str(raised.value)


def test_load_image_resizes_to_the_stored_size_then_centre_crops(tmp_path):
    contract = ModelContract.from_hparams({**HPARAMS, "resize_size": (18, 18)}, [0.5] * 3, [0.25] * 3)
    pixels = np.zeros((36, 72, 3), dtype=np.uint8)
    pixels[:, 36:] = 255  # left half black, right half white
    Image.fromarray(pixels).save(tmp_path / "wide.png")
    image = contract.load_image(tmp_path / "wide.png")
    assert image.shape == (3, 16, 16) and image.dtype == np.uint8
    # 36x72 -> 18x36 -> centre 18x18 -> centre 16x16: the black/white edge sits in the middle column.
    assert image[:, :, :7].max() == 0 and image[:, :, 9:].min() == 255
