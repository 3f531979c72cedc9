"""Backbones by class path: only an ``nn.Module`` subclass meeting the contract is built, and one from outside the
package only when trusted."""

from __future__ import annotations

import pytest

from litstarter._engine.trust import UntrustedCodeError
from litstarter.models import create_backbone
from litstarter.models.registry import BackboneError

MINE = "tests.examples.my_backbones"


def test_only_an_nn_module_class_meeting_the_contract_is_built() -> None:
    assert create_backbone(f"{MINE}.TinyNet", in_channels=1, width=4).num_features == 4
    with pytest.raises(BackboneError, match="not an nn.Module subclass"):
        create_backbone(f"{MINE}.build_anything")
    with pytest.raises(BackboneError, match="not an nn.Module subclass"):
        create_backbone("os.system")
    with pytest.raises(ValueError, match="no int num_features"):
        create_backbone(f"{MINE}.NoFeatures")
    with pytest.raises(BackboneError, match="cannot import 'not_there'.*PYTHONPATH"):
        create_backbone("not_there.Net")
    with pytest.raises(BackboneError, match="unknown backbone 'resnet19'"):
        create_backbone("resnet19")


def test_a_class_from_outside_the_package_needs_trust_and_ours_does_not() -> None:
    with pytest.raises(UntrustedCodeError, match="tests.examples.my_backbones.TinyNet.*--trust_model"):
        create_backbone(f"{MINE}.TinyNet", trust_model=False)
    assert create_backbone("litstarter.models.small_cnn.SmallCNN", trust_model=False).num_features > 0
