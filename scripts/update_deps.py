"""The dependency half of ``make update-engine``: upstream's changed requirement ranges, three-way, in pyproject.toml.

A range is taken where upstream changed it since the base and this clone still has the base's; one the owner changed
too is reported, not written. Requirements are added where upstream added them to a group this clone still has.
"""

from __future__ import annotations

import re


def requirements(text: str) -> dict[str, dict[str, str]]:
    """``group -> {distribution: requirement}`` of a pyproject text ("" for the core dependencies)."""
    import tomllib  # Python >= 3.11; update-engine reads dependencies only there

    project = tomllib.loads(text).get("project", {})
    groups = {"": project.get("dependencies", []), **project.get("optional-dependencies", {})}
    name = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
    return {g: {name.match(r).group(1).lower(): r for r in reqs} for g, reqs in groups.items()}


def dependency_changes(ours: str, base: str | None, new: str) -> list[tuple[str, str, str | None, str]]:
    """``(group, distribution, ours or None, upstream's)`` for each requirement upstream changed since the base,
    in the groups this clone still has. ``ours`` is None where this clone lacks it; a range the owner changed too
    comes back as it is, and the caller reports it without writing."""
    mine, theirs = requirements(ours), requirements(new)
    before = requirements(base) if base is not None else {}
    found = []
    for group, reqs in theirs.items():
        if group not in mine:
            continue
        for dist, req in reqs.items():
            old = before.get(group, {}).get(dist)
            if req != old and mine[group].get(dist) != req:
                found.append((group, dist, mine[group].get(dist), req))
    return found


def set_requirement(text: str, group: str, old: str | None, new: str) -> str:
    """``text`` with requirement ``old`` of ``group`` replaced by ``new`` (added at the array's end when None)."""
    if old is not None:
        return text.replace(f'"{old}"', f'"{new}"', 1)
    key = "dependencies" if group == "" else re.escape(group)
    start = re.search(rf"^{key}\s*=\s*\[", text, re.M).end()
    quoted, end = False, start
    while text[end] != "]" or quoted:  # the closing bracket, outside strings (uvicorn[standard] is inside one)
        quoted ^= text[end] == '"'
        end += 1
    if "\n" in text[start:end]:
        line = text.rfind("\n", start, end) + 1
        return f'{text[:line]}    "{new}",\n{text[line:]}'
    return f'{text[:end].rstrip().rstrip(",")}, "{new}"{text[end:]}'


def take(ours: str, base: str | None, new: str, write: bool) -> str:
    """Print each requirement upstream changed; returns ``ours`` with those it may take (when ``write``)."""
    before = requirements(base) if base is not None else {}
    for group, dist, mine, theirs in dependency_changes(ours, base, new):
        where = "dependencies" if group == "" else f"[{group}]"
        safe = mine is None or before.get(group, {}).get(dist) == mine
        verb = ("added" if write else "to add") if mine is None else ("updated" if write else "to update")
        print(
            f"  pyproject {where}: {mine or '-'} -> {theirs} ({verb if safe else 'changed here too: take it by hand'})"
        )
        if write and safe:
            ours = set_requirement(ours, group, mine, theirs)
    return ours
