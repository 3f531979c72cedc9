"""The docs stay true: README.md is a front page, docs/ holds the detail, and every config, script, make target,
argument and relative link they name exists; the recipes cover every practice, troubleshooting every symptom."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import lightning as L
import pytest

from litstarter.data import (
    DigitsDataModule,
    ImageFolderDataModule,
    StreamingDataModule,
)
from litstarter.tasks.base import ImageTask
from litstarter.tasks.classification import ImageClassifier
from litstarter.tasks.multilabel import MultilabelClassifier
from tests.helpers import REPO

README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, *DOCS]
MAX_README_LINES = 150

PRACTICES = [
    "AMP",
    "accumulation",
    "clipping",
    "checkpoint policy",
    "resume",
    "imbalance sampling",
    "data cache",
    "augmentation",
    "warmup",
    "label smoothing",
    "gradient checkpointing",
    "compile",
    "export and verification",
    "quantization",
    "inference",
    "fine-tuning",
    "DDP",
    "FSDP",
    "multi-node",
    "profiling",
    "seeding and determinism",
    "logging",
    "serving",
]
SYMPTOMS = [
    "not go down", "NaN", "out of memory", "memory grows", "same device", "shape", "slow",
    "after export",
]  # fmt: skip
PATH_PATTERN = r"(?:configs|benchmarks|scripts|notebooks|examples|docs|tests)/[\w./-]+\.(?:yaml|py|sh|sbatch|ipynb|md)"


def _page_id(path: Path) -> str:
    return str(path.relative_to(REPO))


def _tables(page: Path, first_column: str) -> list[list[str]]:
    """The rows of every table of ``page`` whose first header cell is ``first_column``, as cells."""
    rows, lines = [], page.read_text().splitlines()
    for i, line in enumerate(lines):
        header = lines[i - 2] if i >= 2 else ""
        if line.startswith("|") and lines[i - 1].startswith("| ---") and header.startswith(f"| {first_column} |"):
            for row in lines[i:]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]])
    return rows


RECIPES = _tables(REPO / "docs" / "recipes.md", "practice")
SIGNATURES = {
    "model": set(inspect.signature(ImageTask).parameters)  # the shared ones, and each task's own
    | set(inspect.signature(ImageClassifier).parameters)
    | set(inspect.signature(MultilabelClassifier).parameters)
    | {"help"},  # jsonargparse's --model.help=<task>: that task's arguments
    "data": set(inspect.signature(ImageFolderDataModule).parameters)
    | set(inspect.signature(StreamingDataModule).parameters)
    | set(inspect.signature(DigitsDataModule).parameters),
    "trainer": set(inspect.signature(L.Trainer).parameters),
}


def test_readme_is_a_front_page_that_links_every_docs_page() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= MAX_README_LINES, f"README.md has grown past {MAX_README_LINES} lines"
    for heading in ("## Quick start", "## Map", "## Make it yours", "## Documentation"):
        assert heading in text, f"README.md lacks {heading}"
    for page in DOCS:
        assert f"]({_page_id(page)})" in text, f"README.md does not link {_page_id(page)}"


def test_quick_start_is_the_two_make_commands() -> None:
    quick = README.read_text().split("## Quick start\n", 1)[1].split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in quick.splitlines()[1:] if line.strip()]
    assert commands == ["make train", "make test"]


def test_recipes_cover_every_practice() -> None:
    names = " ".join(row[0] for row in RECIPES).lower()
    missing = [p for p in PRACTICES if p.lower() not in names]
    assert not missing, f"docs/recipes.md lacks rows for {missing}"


@pytest.mark.parametrize("row", RECIPES, ids=[r[0] for r in RECIPES])
def test_recipe_row_gives_a_config_and_names_real_arguments(row: list[str]) -> None:
    assert len(row) == 4, f"recipe row must have 4 cells (practice, config, delta flag, where it lives): {row}"
    assert re.search(r"configs/|config\.yaml|litstarter ", row[1]), f"recipe {row[0]!r} names no config: {row[1]!r}"
    for group, key in re.findall(r"`(?:--)?(model|data|trainer)\.(?:init_args\.)?(\w+)", " ".join(row)):
        assert key in SIGNATURES[group], f"recipe {row[0]!r} names {group}.{key}, which is not an argument"


def test_troubleshooting_covers_the_common_symptoms() -> None:
    rows = _tables(REPO / "docs" / "troubleshooting.md", "symptom")
    symptoms = " ".join(row[0] + " " + row[1] for row in rows).lower()
    missing = [s for s in SYMPTOMS if s.lower() not in symptoms]
    assert not missing, f"docs/troubleshooting.md lacks {missing}"


#: Pages about a project `litstarter new` writes: the paths they name are the project's (or this repository's).
PROJECT_PAGES = {"docs/new.md"}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A project `litstarter new` writes, with every extra that ships a file."""
    from litstarter.new import answers, parse_extras, render

    target = tmp_path_factory.mktemp("new") / "pets"
    render(target, answers(target, "classification", parse_extras("deploy,tune", "classification"), "pets", "x"))
    return target


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_file_flag_and_make_target_a_page_names_exists(page: Path, request) -> None:
    text = page.read_text()
    roots = [REPO, request.getfixturevalue("project")] if _page_id(page) in PROJECT_PAGES else [REPO]
    for path in sorted(set(re.findall(PATH_PATTERN, text))):
        assert any((root / path).exists() for root in roots), f"{_page_id(page)} names {path}, which does not exist"
    for group, key in sorted(set(re.findall(r"--(model|data|trainer)\.(?:init_args\.)?(\w+)", text))):
        assert key in SIGNATURES[group], f"{_page_id(page)} names --{group}.{key}, which is not an argument"
    makefile = (REPO / "Makefile").read_text()
    for target in sorted(set(re.findall(r"`make ([a-z][\w-]*)", text))):
        assert re.search(rf"^{target}:", makefile, re.M), f"{_page_id(page)} names `make {target}`; no such target"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_relative_link_resolves(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor on the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{_page_id(page)} links {target}, which does not exist"


@pytest.mark.parametrize("page", [*PAGES, *sorted((REPO / "configs").rglob("*.yaml"))], ids=_page_id)
def test_every_dotted_name_a_page_cites_resolves(page: Path) -> None:
    """``litstarter.data.FastAugmentation``, ``litstarter.optim.WarmupCosineLR``: a module, or an attribute of one."""
    import importlib

    for name in sorted(set(re.findall(r"\b(litstarter(?:\.\w+)+)", page.read_text()))):
        parts, found = name.split("."), None
        for cut in range(len(parts), 0, -1):
            try:
                found = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attribute in parts[cut:]:
                found = getattr(found, attribute, None)
            break
        assert found is not None, f"{_page_id(page)} cites {name}, which does not resolve"


def test_the_engine_promise_names_only_what_the_project_zone_imports_from_the_engine() -> None:
    """docs/make_it_yours.md's public surface of the engine is real: each name is imported from ``_engine`` by the
    project zone (what an update may change only in a major version)."""
    import ast

    text = (REPO / "docs" / "make_it_yours.md").read_text()
    promise = text.split("**What the engine promises between versions.**", 1)[1].split("\n\n", 1)[0]
    cited = set(re.findall(r"`([A-Za-z_]\w*)`", promise))
    package = REPO / "src" / "litstarter"
    project = [
        *package.glob("*.py"),
        *(p for zone in ("models", "data", "callbacks", "tasks") for p in (package / zone).rglob("*.py")),
    ]
    imported = set()
    for path in project:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and "_engine" in (node.module or "").split("."):
                imported |= {alias.name for alias in node.names}
    assert len(cited) >= 10 and cited <= imported, f"cited but not imported from the engine: {sorted(cited - imported)}"
