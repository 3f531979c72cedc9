"""The checkpoint decides its model, out loud.

``test``, ``validate``, ``predict`` and ``fit --ckpt_path`` rebuild the model from the settings the checkpoint
stored: LightningCLI merges them over the parsed config (right after parsing). That is right (the weights fit
only the model that made them), but a user who asked for another backbone would otherwise never hear that they did
not get it. So, before the merge, every model setting the user gave (their ``--config`` files and options, not
the parser's defaults) is compared with the checkpoint's, and each difference is named in one line. A resumed
``fit`` whose architecture differs is an error: its optimiser state belongs to one model.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from litstarter.errors import UsageError

from .tracking import flatten

log = logging.getLogger("litstarter")

#: Model settings that make the network what it is: a ``fit --ckpt_path`` that differs in one is refused.
ARCHITECTURE = ("model.backbone", "model.backbone_kwargs")


def _plain(value):
    """``value`` as JSON would hold it (tuples as lists, namespaces as dicts), so that two sources compare."""
    if hasattr(value, "as_dict"):
        value = value.as_dict()
    return json.loads(json.dumps(value, default=str))


def overruled(given_model: Mapping, hparams: Mapping) -> list[tuple[str, object, object]]:
    """``(key, the user's value, the checkpoint's)`` for each model setting the user gave that the checkpoint
    stored differently (settings the checkpoint lacks are not compared).

    Args:
        given_model: The model settings the user gave (``model`` of a parse without defaults).
        hparams: The checkpoint's ``hyper_parameters``.
    """
    given = _plain(dict(given_model))
    if "class_path" in given or "init_args" in given:  # a task by class path: compare its arguments
        given = given.get("init_args") or {}
    ours = flatten(given, "model")
    theirs = flatten(_plain({k: v for k, v in hparams.items() if not str(k).startswith("_")}), "model")
    return [(k, v, theirs[k]) for k, v in ours.items() if k in theirs and v != theirs[k]]


def _listed(items: list[tuple[str, object, object]]) -> str:
    return "; ".join(f"{key}: {yours} in your config, {theirs} in the checkpoint" for key, yours, theirs in items)


def say_what_the_checkpoint_overrules(
    subcommand: str, given_model: Mapping | None, hparams: Mapping, ckpt_path: str
) -> None:
    """One line naming each model setting of the user's that the checkpoint's overrules; for ``fit``, an error when
    one of them is the architecture.

    Raises:
        UsageError: ``fit --ckpt_path`` with another backbone (or its arguments) than the checkpoint's.
    """
    if not given_model or not hparams:
        return
    differ = overruled(given_model, hparams)
    architecture = [d for d in differ if any(d[0] == a or d[0].startswith(a + ".") for a in ARCHITECTURE)]
    if subcommand == "fit" and architecture:
        raise UsageError(
            f"fit --ckpt_path '{ckpt_path}' continues the checkpoint's model and its optimiser state, but your config"
            f" asks for another architecture: {_listed(architecture)}. Resume with the checkpoint's (drop the change),"
            f" or start a new fit from its weights with --model.init_from {ckpt_path}"
        )
    if differ:
        log.warning(
            f"--ckpt_path '{ckpt_path}' rebuilds the model from its own settings: {_listed(differ)}: using the"
            " checkpoint's"
        )
