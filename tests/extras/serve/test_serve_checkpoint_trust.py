"""serve loads a checkpoint as infer does: a class its settings name never runs, and a foreign backbone is refused."""

from __future__ import annotations

import pytest
import torch

from litstarter._engine.trust import UntrustedCodeError
from litstarter.extras.serve.command import load_backends
from tests.helpers import imported_markers, write_marker_module, write_tampered_checkpoint


def test_serve_builds_only_the_network_of_a_checkpoint_whose_settings_name_foreign_classes(
    digits_run, tmp_path, monkeypatch
):
    monkeypatch.syspath_prepend(str(tmp_path))
    ckpt = digits_run / "checkpoints" / "last.ckpt"
    optimizer = torch.load(ckpt, weights_only=True)["hyper_parameters"]["optimizer"]
    for name in ("evil_optimizer", "evil_lr_scheduler", "evil_backbone"):
        write_marker_module(tmp_path, name)
    settings = write_tampered_checkpoint(
        ckpt,
        tmp_path / "settings.ckpt",
        optimizer={**optimizer, "class_path": "evil_optimizer.Opt"},
        lr_scheduler={"class_path": "evil_lr_scheduler.Sched", "init_args": {}},
    )
    backbone = write_tampered_checkpoint(ckpt, tmp_path / "backbone.ckpt", backbone="evil_backbone.Net")
    (backend,) = load_backends(str(settings), workers=1, num_threads=1)
    assert backend is not None
    with pytest.raises(UntrustedCodeError, match="evil_backbone.Net"):
        load_backends(str(backbone), workers=1, num_threads=1)
    assert imported_markers(tmp_path) == []
