"""jsonargparse's refusals as one sentence: ``<key or file>: <what is wrong>``, with the nearest option for a typo.

jsonargparse answers a mistake with the usage (sixty lines) and an indented tree of every union type it tried. The
CLI parses with ``exit_on_error=False`` and ``allow_abbrev=False`` (``--trainer.max_epoch`` is a typo, not
``max_epochs``), and turns the :class:`jsonargparse.ArgumentError` into a sentence here.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

import yaml

from ..errors import did_you_mean


def config_files(args: Sequence[str]) -> list[str]:
    """The ``--config`` / ``-c`` files of a command line, in order."""
    files, take = [], False
    for arg in args:
        if take:
            files.append(arg)
        take = arg in ("--config", "-c")
        if arg.startswith("--config="):
            files.append(arg.split("=", 1)[1])
    return files


def yaml_problem(files: Sequence[str]) -> str | None:
    """``<file> line L, column C: <problem>`` for the first config file that is not valid YAML."""
    for name in files:
        try:
            yaml.safe_load(Path(name).read_text())
        except (OSError, UnicodeDecodeError):
            continue  # the parser names a missing file itself
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            hint = " (a tab: YAML indents with spaces)" if mark and "\t" in Path(name).read_text() else ""
            return f"{name}{where}: {problem}{hint}"
    return None


def _file_with_key(files: Sequence[str], dotted: str) -> str | None:
    """The last config file (the one that wins) that sets ``dotted``."""
    for name in reversed(files):
        try:
            node = yaml.safe_load(Path(name).read_text())
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return name
    return None


def _missing_base(source: str | None, files: Sequence[str]) -> str:
    """`` (<source> states only its changes to <base>: pass --config <base> before it)`` where the command on
    ``source``'s opening lines (every stock config opens with the one that runs it) names a config file that the
    command line lacks, and no other file of that concern (``configs/data/image_folder.yaml`` stands in for
    ``configs/data/digits.yaml``); ``""`` otherwise."""
    try:
        head = Path(source).read_text().splitlines()[:5] if source else []
    except (OSError, UnicodeDecodeError):
        return ""
    command = next((line for line in head if line.startswith("# litstarter ")), "")
    given = [Path(name).resolve().as_posix() for name in files]
    bases = re.findall(r"--config[= ](\S+\.ya?ml)", command)
    missing = [b for b in bases if not any(_stands_in(g, b) for g in given)]
    if not missing:
        return ""
    before = " ".join(f"--config {b}" for b in missing)
    return f" ({source} states only its changes to {', '.join(missing)}: pass {before} before it)"


def _stands_in(given: str, base: str) -> bool:
    """Whether the resolved path ``given`` is ``base`` (as its command names it), or another file of its concern
    folder (``configs/<concern>/``)."""
    parts = PurePosixPath(base).parts
    folder = "/".join(p for p in parts[:-1] if p not in (".", ".."))
    return given.endswith("/" + "/".join(p for p in parts if p not in (".", ".."))) or (
        len(parts) > 2 and f"/{folder}/" in given
    )


def _init_options(class_path: str) -> list[str]:
    """The ``__init__`` arguments of an already imported class (nothing is imported here), with those its
    ``**kwargs`` pass on to its base classes' ``__init__``."""
    module, _, name = class_path.rpartition(".")
    cls = getattr(sys.modules.get(module), name, None)
    found: list[str] = []
    for klass in cls.__mro__ if isinstance(cls, type) else ():
        if "__init__" not in vars(klass):
            continue
        try:
            parameters = inspect.signature(klass.__init__).parameters.values()
        except (TypeError, ValueError):
            break
        found += [p.name for p in parameters if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if not any(p.kind == p.VAR_KEYWORD for p in parameters):
            break
    return found


def _literals(what: str) -> str:
    """``Literal[64, '32']`` as ``64, '32'``."""
    return re.sub(r"Literal\[(.*?)\]", r"\1", what)


def sentence(message: str, known_keys: Iterable[str] = (), args: Sequence[str] = ()) -> str:
    """jsonargparse's refusal ``message`` as one sentence naming the key or file, what was expected and what was
    given; ``known_keys`` (the parser's dotted keys) give the nearest option for an unknown one; ``args`` is the
    command line (its subcommand and ``--config`` files)."""
    known = list(known_keys)
    files = config_files(args)
    helps = f"litstarter {args[0] if args and not args[0].startswith('-') else 'fit'} --help lists them"
    if message.startswith("Problems parsing config"):
        return yaml_problem(files) or f"--config: {message.splitlines()[0]}"
    unrecognised = re.match(r"unrecognized arguments: (\S+)", message)
    if unrecognised:
        option = unrecognised[1].split("=", 1)[0]
        hint = did_you_mean(option.lstrip("-"), known)
        return f"{option}: no such option{hint.replace('mean ', 'mean --')} ({helps})"
    not_accepted = re.search(r"(?:Group '([\w.]+)'|Subcommand '\w+') does not accept option '([\w.]+)'", message)
    if not_accepted:
        key = ".".join(part for part in not_accepted.groups() if part)
        source = _file_with_key(files, key)
        hint = _missing_base(source, files) or did_you_mean(key, known)
        return f"{key}{f' in {source}' if source else ''}: no such option{hint}"
    key = ".".join(re.findall(r'Parser key "([\w.]+)"', message))
    unknown = re.search(r"class_path '([\w.]+)':\s+Option '(\w+)' is not accepted", message)
    if unknown:
        class_path, option = unknown[1], unknown[2]
        source = _file_with_key(files, f"{key}.{option}") or _file_with_key(files, f"{key}.init_args.{option}")
        hint = _missing_base(source, files) or did_you_mean(option, _init_options(class_path)) or f" ({helps})"
        where = f" in {source}" if source else ""
        return f"{key}.{option}{where}: not an option of {class_path.rpartition('.')[2]}{hint}"
    callable_option = re.search(
        r"Option '(\w+)' is not accepted\. Got value: Namespace\(class_path='([\w.]+)'", message
    )
    if callable_option:
        option, class_path = callable_option[1], callable_option[2]
        hint = did_you_mean(option, _init_options(class_path)) or f" ({helps})"
        return f"{key}.init_args.{option}: not an option of {class_path.rpartition('.')[2]}{hint}"
    required = re.search(r"class_path '([\w.]+)':\s+the following arguments are required: ([\w, ]+)", message)
    if required:  # e.g. configs/data/image_folder.yaml without --data.root
        options = [f"--{key}.{name.strip()}" for name in required[2].split(",")]
        return f"{', '.join(options)}: required by {required[1].rpartition('.')[2]}, and not given"
    deepest = message[message.rfind("Parser key") :]
    plain = re.match(r'Parser key "[\w.]+": (.+)$', deepest)  # a one-line refusal, e.g. a missing --config file
    if plain:
        return f"{'--' if key == 'config' else ''}{key}: {plain[1]}"
    expected = re.findall(r"Expected an? (?:<class '(\w+)'>|(.+?))(?:\. Got value|$)", deepest, re.M)
    subtypes = re.search(r"Subtypes: \[(.*)\]", deepest)
    given = re.search(r"(?:Given value|Got value): (.*)$", deepest, re.M)
    names = [a or b for a, b in expected] or ([subtypes[1]] if subtypes else ["another value"])
    what = " or ".join(dict.fromkeys(_literals(n.replace("NoneType", "null").replace("typing.", "")) for n in names))
    if not key:  # e.g. a required argument missing, as when a config's base file is left out
        return message.strip().splitlines()[0] + next(filter(None, (_missing_base(f, files) for f in files)), "")
    return f"{key}: expected {what}" + (f", got {given[1].strip()!r}" if given else "")
