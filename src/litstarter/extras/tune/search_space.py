"""The search-space file of ``litstarter tune``: what to search, what to optimise, how to sample and prune.

A search-space file (``configs/search/<name>.yaml``) has four sections::

    objective: {metric: val/acc, direction: maximize}
    sampler: {name: tpe, seed: 42}          # tpe | random, plus the sampler's own arguments
    pruner: {name: median, n_warmup_steps: 1}  # median | percentile | hyperband | none, plus its arguments
    params:
      model.optimizer.init_args.lr: {type: float, low: 1.0e-4, high: 3.0e-2, log: true}
      model.backbone_kwargs.width: {type: int, low: 16, high: 64, step: 16}
      model.dropout: {type: categorical, choices: [0.0, 0.1, 0.3]}
      optimizer: {type: categorical, configs: [configs/optim/adamw.yaml, configs/optim/sgd_nesterov.yaml]}

A ``params`` key is a dotted config key, as on the command line (``--model.dropout``), except for an entry
with ``configs:``: that one picks a whole config file, composed after the ``--config`` stack, and its key is
just the parameter's name. Everything here is checked when the file is read, before any trial starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import yaml

from litstarter.errors import UsageError

SAMPLERS = {"tpe": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler}
PRUNERS = {
    "median": optuna.pruners.MedianPruner,
    "percentile": optuna.pruners.PercentilePruner,
    "hyperband": optuna.pruners.HyperbandPruner,
    "none": optuna.pruners.NopPruner,
}
DIRECTIONS = ("maximize", "minimize")
FIELDS = {
    "float": {"type", "low", "high", "log", "step"},
    "int": {"type", "low", "high", "log", "step"},
    "categorical": {"type", "choices", "configs"},
}


@dataclass
class Param:
    """One searched parameter: a dotted config key (or, with ``configs``, a name for a choice of files)."""

    name: str
    distribution: optuna.distributions.BaseDistribution
    configs: list[str] = field(default_factory=list)  # set: the choices are config files

    @property
    def picks_config(self) -> bool:
        """Whether the choices are config files rather than values of a key."""
        return bool(self.configs)

    def examples(self) -> list[Any]:
        """Values to check the config with before any trial: the range's ends, or every choice."""
        d = self.distribution
        if isinstance(d, optuna.distributions.CategoricalDistribution):
            return list(d.choices)
        return [d.low, d.high]


@dataclass
class SearchSpace:
    """A parsed search-space file. Build it with :func:`load_search_space`."""

    path: Path
    metric: str
    direction: str
    sampler: str
    sampler_args: dict[str, Any]
    seed: int | None
    pruner: str
    pruner_args: dict[str, Any]
    params: list[Param]
    raw: dict[str, Any]

    def make_sampler(self, trial_number: int = 0) -> optuna.samplers.BaseSampler:
        """The sampler, seeded from ``(seed, trial_number)``: one worker replays exactly, and workers that
        start together never draw the same point through equal seeds."""
        seed = (
            None if self.seed is None else int(np.random.SeedSequence([self.seed, trial_number]).generate_state(1)[0])
        )
        return SAMPLERS[self.sampler](seed=seed, **self.sampler_args)

    def make_pruner(self) -> optuna.pruners.BasePruner:
        """The pruner with its arguments."""
        return PRUNERS[self.pruner](**self.pruner_args)

    def suggest(self, trial: optuna.Trial) -> tuple[dict[str, Any], list[str]]:
        """Draw every parameter: ``({dotted key: value}, [config files])`` for this trial."""
        values: dict[str, Any] = {}
        configs: list[str] = []
        for param in self.params:
            value = _suggest(trial, param)
            if param.picks_config:
                configs.append(value)
            else:
                values[param.name] = value
        return values, configs


def _suggest(trial: optuna.Trial, param: Param) -> Any:
    d = param.distribution
    if isinstance(d, optuna.distributions.FloatDistribution):
        return trial.suggest_float(param.name, d.low, d.high, log=d.log, step=d.step)
    if isinstance(d, optuna.distributions.IntDistribution):
        return trial.suggest_int(param.name, d.low, d.high, log=d.log, step=d.step)
    return trial.suggest_categorical(param.name, d.choices)


def load_search_space(path: str | Path, default_seed: int | None = None) -> SearchSpace:
    """Read and check a search-space file.

    Args:
        path: The YAML file.
        default_seed: The sampler's seed when the file gives none (the config's ``seed_everything``).

    Raises:
        UsageError: The file is missing or unreadable, or a section, key or distribution is wrong; the message
            names the file and the entry.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"--search {path}: no such file")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise UsageError(f"--search {path}: not valid YAML ({str(err).splitlines()[0]})") from None
    where = f"search space {path}"
    if not isinstance(raw, dict):
        raise UsageError(f"{where}: expected a mapping with objective, sampler, pruner and params")
    unknown = set(raw) - {"objective", "sampler", "pruner", "params"}
    if unknown:
        raise UsageError(f"{where}: unknown section(s) {sorted(unknown)}; expected objective, sampler, pruner, params")
    if not raw.get("objective"):
        raise UsageError(
            f"{where}: the objective section is missing; add e.g. objective: {{metric: val/acc, direction: maximize}}"
        )
    objective = _section(raw, "objective", where)
    metric = objective.get("metric")
    direction = objective.get("direction", "maximize")
    if not isinstance(metric, str) or not metric:
        raise UsageError(f"{where}: objective.metric must name a logged metric, e.g. val/acc")
    if direction not in DIRECTIONS:
        raise UsageError(f"{where}: objective.direction must be maximize or minimize, got {direction!r}")
    sampler_args = dict(_section(raw, "sampler", where))
    sampler = sampler_args.pop("name", "tpe")
    seed = sampler_args.pop("seed", default_seed)
    pruner_args = dict(_section(raw, "pruner", where))
    pruner = pruner_args.pop("name", "median")
    space = SearchSpace(
        path, metric, direction, sampler, sampler_args, seed, pruner, pruner_args, _params(raw, where), raw
    )
    _check_factory(where, "sampler", sampler, SAMPLERS, lambda: space.make_sampler())
    _check_factory(where, "pruner", pruner, PRUNERS, space.make_pruner)
    return space


def _section(raw: dict, name: str, where: str) -> dict:
    value = raw.get(name) or {}
    if not isinstance(value, dict):
        raise UsageError(f"{where}: {name} must be a mapping, got {value!r}")
    return value


def _check_factory(where: str, what: str, name: str, known: dict, build) -> None:
    if name not in known:
        raise UsageError(f"{where}: {what}.name {name!r} is not one of {sorted(known)}")
    try:
        build()
    except (TypeError, ValueError) as err:
        raise UsageError(f"{where}: {what} {name!r}: {err}") from None


def _params(raw: dict, where: str) -> list[Param]:
    params = raw.get("params")
    if not isinstance(params, dict) or not params:
        raise UsageError(f"{where}: params must map at least one config key to a distribution")
    return [_param(str(name), spec, f"{where}: params.{name}") for name, spec in params.items()]


def _param(name: str, spec: Any, where: str) -> Param:
    if not isinstance(spec, dict) or spec.get("type") not in FIELDS:
        raise UsageError(f"{where}: expected a mapping with type float, int or categorical, got {spec!r}")
    kind = spec["type"]
    unknown = set(spec) - FIELDS[kind]
    if unknown:
        raise UsageError(f"{where}: unknown field(s) {sorted(unknown)} for type {kind}; allowed {sorted(FIELDS[kind])}")
    if kind == "categorical":
        return _categorical(name, spec, where)
    cast = float if kind == "float" else int
    low, high, step = (_number(spec.get(k), cast, f"{where}.{k}") for k in ("low", "high", "step"))
    log = bool(spec.get("log", False))
    if low is None or high is None:
        raise UsageError(f"{where}: a {kind} needs low and high")
    if not low < high:
        raise UsageError(f"{where}: empty range: low ({low}) must be below high ({high})")
    if log and low <= 0:
        raise UsageError(f"{where}: log: true needs low > 0, got {low}")
    if log and step is not None:
        raise UsageError(f"{where}: step and log: true cannot be combined")
    if kind == "float":
        return Param(name, optuna.distributions.FloatDistribution(low, high, log=log, step=step))
    return Param(name, optuna.distributions.IntDistribution(low, high, log=log, step=step or 1))


def _number(value: Any, cast: type, where: str) -> float | int | None:
    if value is None:
        return None
    try:
        number = cast(value) if cast is float else int(str(value))  # YAML reads 1e-4 (no dot) as a string
    except (TypeError, ValueError):
        raise UsageError(f"{where}: expected a{'n integer' if cast is int else ' number'}, got {value!r}") from None
    if not math.isfinite(number):
        raise UsageError(f"{where}: expected a finite number, got {value!r}")
    return number


def _categorical(name: str, spec: dict, where: str) -> Param:
    if ("choices" in spec) == ("configs" in spec):
        raise UsageError(f"{where}: a categorical takes either choices (values) or configs (config files)")
    choices = spec.get("choices", spec.get("configs"))
    if not isinstance(choices, list) or not choices:
        raise UsageError(f"{where}: empty choices: give a non-empty list")
    if len(set(map(repr, choices))) != len(choices):
        raise UsageError(f"{where}: choices repeat a value: {choices}")
    if "configs" in spec:
        missing = [c for c in choices if not Path(str(c)).is_file()]
        if missing:
            raise UsageError(f"{where}: config file(s) {missing} not found (paths are relative to the working folder)")
        choices = [str(c) for c in choices]
        return Param(name, optuna.distributions.CategoricalDistribution(choices), configs=choices)
    bad = [c for c in choices if not (c is None or isinstance(c, (bool, int, float, str)))]
    if bad:
        raise UsageError(f"{where}: choices must be numbers, strings, booleans or null, got {bad}")
    return Param(name, optuna.distributions.CategoricalDistribution(choices))
