"""Warmup + cosine: rises linearly, peaks at the base LR, decays to min_lr_ratio."""

from __future__ import annotations

import pytest
import torch

from litstarter.optim import WarmupCosineLR


def _lrs(steps: int, **kwargs) -> list[float]:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = WarmupCosineLR(opt, total_steps=steps, **kwargs)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_warmup_then_cosine_shape() -> None:
    lrs = _lrs(100, warmup_steps=10, min_lr_ratio=0.0)
    assert lrs[0] < 0.2 and all(a < b for a, b in zip(lrs[:10], lrs[1:11], strict=True))
    assert max(lrs) == pytest.approx(1.0, abs=0.02)
    assert all(a >= b for a, b in zip(lrs[11:], lrs[12:], strict=False))
    assert lrs[-1] < 0.01


def test_fractional_warmup_and_floor() -> None:
    lrs = _lrs(200, warmup_steps=0.1, min_lr_ratio=0.1)
    assert lrs.index(max(lrs)) in range(18, 23)
    assert min(lrs[100:]) >= 0.1 - 1e-9


def test_unset_total_steps_is_a_clear_error() -> None:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    with pytest.raises(RuntimeError, match="total_steps"):
        WarmupCosineLR(opt)


@pytest.mark.parametrize("bad", [dict(warmup_steps=-1), dict(min_lr_ratio=1.5), dict(total_steps=0)])
def test_bad_arguments_name_the_config_key(bad: dict) -> None:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    with pytest.raises(ValueError, match=f"model.lr_scheduler.init_args.{next(iter(bad))}"):
        WarmupCosineLR(opt, **{"total_steps": 10, **bad})
