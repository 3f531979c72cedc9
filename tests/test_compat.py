"""Every private attribute, class and signature of another package that ``src/`` relies on, and a check of each.

A dependency release that renames one fails here, naming the entry and the file that uses it, instead of changing
what the code does without a word. Each use in ``src/`` carries a comment ``tests/test_compat.py: "<entry>"``.
A new private use (``x._name``, ``getattr(x, "_name")``) in ``src/`` fails
:func:`test_every_private_use_in_src_is_listed` until it gets an entry below (or a line in :data:`NOT_A_DEPENDENCY`
saying why it needs none).
"""

from __future__ import annotations

import argparse
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "litstarter"


@dataclass(frozen=True)
class Private:
    """One thing of another package that the code relies on, and how to tell it is still there."""

    name: str  #: what the comment at each use cites
    used_in: tuple[str, ...]  #: files under src/litstarter/
    attrs: tuple[str, ...]  #: the private names those files touch (what the scan below looks for)
    check: Callable[[Path], None]  #: raises when the shape changed (gets a scratch folder)


def assigns(cls: type, attr: str) -> None:
    """``cls`` (or a base) sets ``self.<attr>`` in its source."""
    pattern = re.compile(rf"\bself\.{re.escape(attr)}\b\s*(:[^=\n]+)?=[^=]")
    assert any(pattern.search(s) for s in _sources(cls)), f"{cls.__qualname__} no longer sets self.{attr}"


def _sources(cls: type) -> list[str]:
    """The source of ``cls`` and of each base that has one (C and generated bases have none)."""
    found = []
    for c in cls.__mro__:
        try:
            found.append(inspect.getsource(c))
        except (OSError, TypeError):
            pass
    return found


def method(cls: type, name: str, *params: str, is_async: bool = False) -> None:
    """``cls.<name>`` is a method taking ``params`` (after ``self``), in that order."""
    fn = getattr(cls, name, None)
    assert callable(fn), f"{cls.__qualname__}.{name} is gone"
    got = tuple(inspect.signature(fn).parameters)[1:]
    assert got[: len(params)] == params, f"{cls.__qualname__}.{name}{got} no longer takes {params}"
    assert inspect.iscoroutinefunction(fn) == is_async, f"{cls.__qualname__}.{name}: async is now {not is_async}"


def _uvicorn_protocols(_: Path) -> None:
    from uvicorn.protocols.http import h11_impl, httptools_impl

    for cls, own in ((httptools_impl.HttpToolsProtocol, "cycle"), (h11_impl.H11Protocol, "conn")):
        for name, params in (("connection_made", ("transport",)), ("data_received", ("data",))):
            method(cls, name, *params)
        method(cls, "connection_lost", "exc")
        method(cls, "shutdown")
        for attr in ("loop", "transport", "cycle", own):
            assigns(cls, attr)
    for name in ("on_headers_complete", "on_message_complete"):
        method(httptools_impl.HttpToolsProtocol, name)


def _uvicorn_cycle(_: Path) -> None:
    from uvicorn.protocols.http import h11_impl, httptools_impl

    for module in (httptools_impl, h11_impl):
        assigns(module.RequestResponseCycle, "response_complete")


def _h11_state(_: Path) -> None:
    import h11

    assert isinstance(getattr(h11.Connection, "their_state", None), property), "h11.Connection.their_state is gone"
    assert hasattr(h11, "SEND_BODY"), "h11.SEND_BODY is gone"


def _uvicorn_server(_: Path) -> None:
    import uvicorn

    method(uvicorn.Server, "handle_exit", "sig", "frame")
    method(uvicorn.Server, "on_tick", "counter", is_async=True)


def _typehint(_: Path) -> None:
    import jsonargparse

    parser = jsonargparse.ArgumentParser()
    parser.add_argument("--limit", type=int | float, default=1)
    [action] = [a for a in parser._actions if a.dest == "limit"]
    assert getattr(action, "_typehint", None) == int | float, "ActionTypeHint no longer keeps the hint in _typehint"
    action._typehint = float | int
    assert type(parser.parse_args(["--limit=1"]).limit) is float, "a replaced _typehint is no longer what parses"


def _argparse_actions(_: Path) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--x")
    assert [a.dest for a in parser._actions] == ["help", "x"], "argparse no longer lists its actions in _actions"


def _subcommand_parsers(_: Path) -> None:
    from lightning.pytorch import cli

    assigns(cli.LightningCLI, "_subcommand_parsers")


def _logger_version(tmp: Path) -> None:
    from lightning.pytorch import loggers

    for cls in (loggers.CSVLogger, loggers.TensorBoardLogger):
        logger = cls(str(tmp), name="x")
        logger._version = 7
        assert logger.version == 7 and logger.log_dir.endswith("version_7"), f"{cls.__name__} ignores _version"


def _csv_writer(tmp: Path) -> None:
    from lightning.pytorch import loggers

    logger = loggers.CSVLogger(str(tmp), name="x")
    assert logger._experiment is None and callable(logger._fs.makedirs), "CSVLogger's _experiment/_fs changed"
    sentinel = object()
    logger._experiment = sentinel
    assert logger.experiment is sentinel, "CSVLogger.experiment no longer returns _experiment"


def _check_log_dir_exists(tmp: Path) -> None:
    from lightning.pytorch.loggers import csv_logs

    seen = []

    class Writer(csv_logs.ExperimentWriter):
        def _check_log_dir_exists(self) -> None:
            seen.append((self._fs.isfile(self.metrics_file_path), list(self.metrics_keys)))

    Writer(log_dir=str(tmp / "logs"))
    assert seen == [(False, [])], "ExperimentWriter.__init__ no longer calls _check_log_dir_exists with _fs set"


def _log_hyperparams(_: Path) -> None:
    import lightning as L
    from lightning.pytorch.loggers import utilities

    for cls in (L.LightningModule, L.LightningDataModule):
        assert cls()._log_hyperparams is not None, f"{cls.__name__} has no _log_hyperparams"
    reader = inspect.getsource(utilities._log_hyperparams)
    assert "pl_module._log_hyperparams" in reader and "datamodule._log_hyperparams" in reader, "no longer read"


def _mlflow_settings(_: Path) -> None:
    from lightning.pytorch import loggers

    for attr in ("_tracking_uri", "_experiment_name"):
        assigns(loggers.MLFlowLogger, attr)


def _average_model(_: Path) -> None:
    from lightning.pytorch import callbacks

    assert callbacks.WeightAveraging()._average_model is None, "WeightAveraging has no _average_model"


def _litdata_state(_: Path) -> None:
    from litdata import streaming

    assigns(streaming.StreamingDataset, "_state_dict")
    method(streaming.StreamingDataset, "reset_state_dict")
    method(streaming.StreamingDataset, "set_epoch", "current_epoch")


def _litdata_batch_decode(_: Path) -> None:
    from litdata import streaming

    params = inspect.signature(streaming.StreamingDataset).parameters
    assert "batch_decode" in params, "StreamingDataset no longer takes batch_decode"


def _orig_mod(_: Path) -> None:
    import torch

    net = torch.nn.Linear(1, 1)
    assert torch.compile(net)._orig_mod is net, "torch.compile's module no longer keeps the original in _orig_mod"


RUN = "_engine/run"
SCHEMA = "_engine/config_schema"
PRIVATES = (
    Private("uvicorn HTTP protocols", ("extras/serve/connections.py",), (), _uvicorn_protocols),
    Private("uvicorn RequestResponseCycle.response_complete", ("extras/serve/connections.py",), (), _uvicorn_cycle),
    Private("h11 Connection.their_state", ("extras/serve/connections.py",), (), _h11_state),
    Private("uvicorn Server.handle_exit and on_tick", ("extras/serve/shutdown.py",), (), _uvicorn_server),
    Private(
        "jsonargparse ActionTypeHint._typehint",
        (f"{RUN}/config_file.py", f"{SCHEMA}/arguments.py"),
        ("_typehint",),
        _typehint,
    ),
    Private(
        "argparse ArgumentParser._actions",
        (f"{RUN}/config_file.py", f"{RUN}/cli.py", "_engine/arguments.py", f"{SCHEMA}/arguments.py"),
        ("_actions",),
        _argparse_actions,
    ),
    Private(
        "lightning LightningCLI._subcommand_parsers", (f"{RUN}/cli.py",), ("_subcommand_parsers",), _subcommand_parsers
    ),
    Private("lightning logger._version", (f"{RUN}/callbacks.py",), ("_version",), _logger_version),
    Private("lightning CSVLogger._fs and _experiment", (f"{RUN}/tracking.py",), ("_fs", "_experiment"), _csv_writer),
    Private(
        "lightning ExperimentWriter._check_log_dir_exists",
        (f"{RUN}/tracking.py",),
        ("_check_log_dir_exists",),
        _check_log_dir_exists,
    ),
    Private("lightning _log_hyperparams", (f"{RUN}/tracking.py",), ("_log_hyperparams",), _log_hyperparams),
    Private(
        "lightning MLFlowLogger._tracking_uri and _experiment_name",
        (f"{RUN}/tracking.py",),
        ("_tracking_uri", "_experiment_name"),
        _mlflow_settings,
    ),
    Private("lightning WeightAveraging._average_model", ("callbacks/ema.py",), ("_average_model",), _average_model),
    Private("litdata StreamingDataset._state_dict", ("data/streaming_dataset.py",), ("_state_dict",), _litdata_state),
    Private("litdata StreamingDataset(batch_decode=)", ("data/streaming_dataset.py",), (), _litdata_batch_decode),
    Private("torch OptimizedModule._orig_mod", ("_engine/checkpoints.py",), ("_orig_mod",), _orig_mod),
)

#: Private-looking names the scan finds that are no other package's: why each needs no entry.
NOT_A_DEPENDENCY = {
    ("extras/streaming/convert.py", "_image"): "a docstring naming our own samples._image",
    ("_engine/run/callbacks.py", "_atomic_save"): "a docstring naming what Lightning does; nothing calls it",
    ("_engine/arguments.py", "_given"): "our own attribute, set by our ArgumentParser.parse_known_args",
}

#: ``x._name`` (not ``self._``/``cls._``, not our ``litstarter._engine``), and ``getattr/hasattr(x, "_name"``.
USE = re.compile(r"(?<![\w.])(?!self\.|cls\.)\w+\._([a-z]\w*)|(?:get|has)attr\(\w+, \"(_[a-z]\w*)\"")


def private_uses() -> set[tuple[str, str]]:
    """``(file under src/litstarter, name)`` for every private use the scan finds."""
    found = set()
    for path in sorted(SRC.rglob("*.py")):
        for match in USE.finditer(path.read_text(encoding="utf-8")):
            name = f"_{match[1]}" if match[1] else match[2]
            if name != "_engine":
                found.add((path.relative_to(SRC).as_posix(), name))
    return found


def check_entry(entry: Private, tmp: Path) -> None:
    """Run ``entry``'s check; a failure names the entry and the files to fix."""
    try:
        entry.check(tmp)
    except Exception as err:  # AttributeError, ImportError, AssertionError: all mean "it moved"
        raise AssertionError(f'"{entry.name}" (used in {", ".join(entry.used_in)}) changed: {err}') from err


@pytest.mark.parametrize("entry", PRIVATES, ids=lambda e: e.name)
def test_each_private_dependency_still_has_the_shape_the_code_relies_on(entry: Private, tmp_path: Path) -> None:
    pytest.importorskip(entry.name.split()[0])
    check_entry(entry, tmp_path)


@pytest.mark.parametrize("entry", PRIVATES, ids=lambda e: e.name)
def test_each_use_points_to_its_entry(entry: Private) -> None:
    for used_in in entry.used_in:
        assert f'tests/test_compat.py: "{entry.name}"' in (SRC / used_in).read_text(encoding="utf-8"), used_in


def test_every_private_use_in_src_is_listed() -> None:
    listed = {(f, a) for e in PRIVATES for f in e.used_in for a in e.attrs} | set(NOT_A_DEPENDENCY)
    unlisted = sorted(private_uses() - listed)
    assert not unlisted, f"private uses with no entry in tests/test_compat.py PRIVATES: {unlisted}"


def test_a_renamed_attribute_fails_naming_its_entry(monkeypatch, tmp_path: Path) -> None:
    import uvicorn

    class Renamed(uvicorn.Server):  # a copy of a release that renamed on_tick
        pass

    monkeypatch.setattr(Renamed, "on_tick", None)
    monkeypatch.setattr(uvicorn, "Server", Renamed)
    [entry] = [e for e in PRIVATES if e.name == "uvicorn Server.handle_exit and on_tick"]
    with pytest.raises(AssertionError, match=r'"uvicorn Server.handle_exit and on_tick" \(used in extras/serve/'):
        check_entry(entry, tmp_path)


def test_a_renamed_instance_attribute_fails_naming_its_entry(monkeypatch, tmp_path: Path) -> None:
    from lightning.pytorch import callbacks

    class Renamed(callbacks.WeightAveraging):  # a copy of a release that renamed _average_model
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self._averaged = self.__dict__.pop("_average_model")

    monkeypatch.setattr(callbacks, "WeightAveraging", Renamed)
    [entry] = [e for e in PRIVATES if e.name == "lightning WeightAveraging._average_model"]
    with pytest.raises(AssertionError, match=r'"lightning WeightAveraging._average_model" \(used in callbacks/ema'):
        check_entry(entry, tmp_path)
