"""Builders the tune extra's tests share."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import DEFAULT_CONFIG


def tune_args(save_dir: Path, search: Path | str, *extra: str) -> list[str]:
    """A ``litstarter tune`` command line on the digits default with ``search``, writing under ``save_dir``."""
    return ["tune", "--config", str(DEFAULT_CONFIG), "--search", str(search),
            f"--trainer.logger.init_args.save_dir={save_dir}", *extra]  # fmt: skip
