"""Deprecated names: each old name of a public module warns once (a ``FutureWarning`` naming its replacement, the
release it goes in and the CHANGELOG), gives the same object as the new name, stays off ``__all__`` and
docs/api.md, and is listed in the CHANGELOG; no deprecation outstays the release it names.
"""

from __future__ import annotations

import importlib
import re
import warnings

import pytest
from packaging.version import Version

import litstarter
from litstarter._engine import deprecation
from tests.helpers import REPO
from tests.test_public_api import listed, public_modules

#: Every deprecated name, by module: the old name and its replacement. Names whose 0.1.0 home was private
#: (``litstarter._engine.tta``, ``.baseline``, ``.plots``, ``.multilabel``) owe no deprecation.
EXPECTED = {
    "litstarter.metrics": {
        "AUROC_THRESHOLDS": "_AUROC_THRESHOLDS",
        "CONFUSION_MATRIX": "_CONFUSION_MATRIX",
        "TIE_BREAK": "_TIE_BREAK",
    },
    "litstarter.optim": {"NORM_LAYERS": "_NORM_LAYERS", "split_groups_by_module": "_split_groups_by_module"},
    "litstarter.cli": {"import_tasks": "_import_tasks"},
}
CASES = [(module, old, new) for module, names in EXPECTED.items() for old, new in names.items()]


def declared() -> dict[str, dict[str, deprecation.Deprecated]]:
    """Every deprecation the public modules declare, once all of them are imported."""
    for module in sorted(public_modules()):
        importlib.import_module(module)
    return deprecation.DEPRECATED


def overdue(version: str) -> list[str]:
    """The deprecated names a release of ``version`` must no longer have."""
    return [
        f"{module}.{old} (removed in {entry.removed_in})"
        for module, names in declared().items()
        for old, entry in names.items()
        if Version(version) >= Version(entry.removed_in)
    ]


@pytest.fixture(autouse=True)
def _none_warned_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a fresh process does: no name has warned."""
    monkeypatch.setattr(deprecation, "_warned", set())


def test_the_deprecations_are_these() -> None:
    assert {m: {old: e.new for old, e in names.items()} for m, names in declared().items()} == EXPECTED


@pytest.mark.parametrize(("module", "old", "new"), CASES)
def test_an_old_name_warns_once_and_is_the_new_ones_object(module: str, old: str, new: str) -> None:
    imported = importlib.import_module(module)
    removed_in = declared()[module][old].removed_in
    with pytest.warns(FutureWarning) as caught:
        exec(f"from {module} import {old} as value", namespace := {})
    assert len(caught) == 1
    text = str(caught[0].message)
    assert f"{module}.{old} " in text and f"{module}.{new} " in text, text
    assert f"removed in {removed_in}" in text and "CHANGELOG.md" in text, text
    assert caught[0].filename == "<string>", "the warning points at the line that imported the name"
    assert namespace["value"] is getattr(imported, new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(imported, old) is getattr(imported, new), "a second use does not warn again"


@pytest.mark.parametrize(("module", "old", "new"), CASES)
def test_an_old_name_is_off_all_dir_and_the_api_page(module: str, old: str, new: str) -> None:
    imported = importlib.import_module(module)
    assert old not in imported.__all__ and old not in dir(imported)
    assert old not in listed()[module], f"docs/api.md lists the deprecated {module}.{old}"


@pytest.mark.parametrize("module", sorted(EXPECTED))
def test_an_unknown_name_raises_the_usual_attribute_error(module: str) -> None:
    imported = importlib.import_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match=rf"^module '{re.escape(module)}' has no attribute 'no_such_name'$"):
            imported.no_such_name  # noqa: B018
        with pytest.raises(ImportError, match="cannot import name 'no_such_name'"):
            exec(f"from {module} import no_such_name")


@pytest.mark.parametrize(("module", "old", "new"), CASES)
def test_the_changelog_lists_each_with_its_removal(module: str, old: str, new: str) -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    deprecated = re.search(r"^### Deprecated\n(.*?)^##", changelog, re.M | re.S)
    assert deprecated, "CHANGELOG.md has no Deprecated section"
    removed_in = declared()[module][old].removed_in
    rows = [line for line in deprecated[1].splitlines() if line.startswith(f"| `{module}.{old}` |")]
    assert rows and f"`{module}.{new}`" in rows[0] and removed_in in rows[0], rows


def test_no_deprecation_outstays_its_release() -> None:
    """A name goes in the release its entry names: delete it (and its entry) before releasing that version."""
    assert overdue(litstarter.__version__) == [], f"{litstarter.__version__} must no longer have these"


def test_a_deprecation_lasts_a_minor_release_and_goes_in_one() -> None:
    current = Version(litstarter.__version__)
    for module, names in declared().items():
        for old, entry in names.items():
            removed_in = Version(entry.removed_in)
            assert removed_in > current and removed_in.micro == 0, f"{module}.{old}: removed in {removed_in}"


def test_the_removal_check_bites_at_the_next_minor() -> None:
    assert len(overdue("0.3.0")) == len(CASES)
    assert overdue("0.2.9") == []
