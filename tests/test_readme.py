"""The README stays true: every recipe row points at a config or flag that exists, and it covers the practices."""

from __future__ import annotations

import inspect
import re

import lightning as L
import pytest

from litstarter.data import DigitsDataModule, ImageFolderDataModule
from litstarter.task import ImageClassifier
from tests.conftest import REPO

README = (REPO / "README.md").read_text()
DOCS = {path.relative_to(REPO).as_posix(): path.read_text() for path in sorted((REPO / "docs").glob("*.md"))}

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
    "serving",
    "fine-tuning",
    "DDP",
    "FSDP",
    "multi-node",
    "profiling",
    "seeding and determinism",
    "logging",
]
SYMPTOMS = ["not go down", "NaN", "out of memory", "memory grows", "same device", "shape", "slow", "after export"]


def _table(heading: str) -> list[list[str]]:
    section = README.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows[2:]]  # skip header


RECIPES = _table("Recipes")


def test_recipes_cover_every_practice() -> None:
    names = " ".join(row[0] for row in RECIPES).lower()
    missing = [p for p in PRACTICES if p.lower() not in names]
    assert not missing, f"README recipes lack rows for {missing}"


@pytest.mark.parametrize("row", RECIPES, ids=[r[0] for r in RECIPES])
def test_recipe_row_points_at_things_that_exist(row: list[str]) -> None:
    assert len(row) == 4, f"recipe row must have 4 cells: {row}"
    text = " ".join(row)
    for path in re.findall(r"(?:configs|benchmarks|scripts|notebooks)/[\w./-]+\.(?:yaml|py|sh|sbatch|ipynb)", text):
        assert (REPO / path).exists(), f"recipe {row[0]!r} names {path}, which does not exist"
    signatures = {
        "model": set(inspect.signature(ImageClassifier).parameters),
        "data": set(inspect.signature(ImageFolderDataModule).parameters)
        | set(inspect.signature(DigitsDataModule).parameters),
        "trainer": set(inspect.signature(L.Trainer).parameters),
    }
    for group, key in re.findall(r"`(?:--)?(model|data|trainer)\.(\w+)", text):
        assert key in signatures[group], f"recipe {row[0]!r} names {group}.{key}, which is not an argument"


def test_troubleshooting_covers_the_common_symptoms() -> None:
    symptoms = " ".join(row[0] + " " + row[1] for row in _table("Troubleshooting")).lower()
    missing = [s for s in SYMPTOMS if s.lower() not in symptoms]
    assert not missing, f"README troubleshooting lacks {missing}"


def test_quick_start_is_the_two_make_commands() -> None:
    quick = README.split("## Quick start\n", 1)[1].split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in quick.splitlines()[1:] if line.strip()]
    assert commands == ["make train", "make test"]
    makefile = (REPO / "Makefile").read_text()
    for target in ("train", "test", "help", "lint", "tensorboard", "clean"):
        assert re.search(rf"^{target}:", makefile, re.M), f"Makefile lacks `{target}`"


def test_every_config_named_in_the_readme_exists() -> None:
    for path in sorted(set(re.findall(r"configs/[\w/-]+\.yaml", README))):
        assert (REPO / path).exists(), f"README names {path}, which does not exist"


@pytest.mark.parametrize("name", ["README.md", *DOCS])
def test_paths_named_in_the_docs_exist(name: str) -> None:
    text = README if name == "README.md" else DOCS[name]
    for path in sorted(set(re.findall(r"(?:docs|examples|benchmarks|scripts)/[\w./-]+\.(?:md|py|sh|sbatch)", text))):
        assert (REPO / path).exists(), f"{name} names {path}, which does not exist"


def test_readme_links_every_docs_page() -> None:
    for name in DOCS:
        assert f"]({name})" in README, f"README does not link {name}"


@pytest.mark.parametrize("name", ["README.md", *DOCS])
def test_serve_options_and_routes_in_the_docs_exist(name: str) -> None:
    build_parser = pytest.importorskip("litstarter.deploy.serve", reason="deploy/ was deleted").build_parser

    text = README if name == "README.md" else DOCS[name]
    options = {a for action in build_parser()._actions for a in action.option_strings}
    commands = re.findall(r"litstarter serve ([^`\n]*)", text)
    cited = {o for command in commands for o in re.findall(r"(--\w+)", command)}
    if name == "docs/serving.md":  # the page explains options in prose too: `--max_batch_size 1`
        cited |= set(re.findall(r"`(--\w+)", text))
        assert {"--max_batch_size", "--batch_timeout", "--workers", "--request_timeout"} <= cited
    assert cited <= options, f"{name} cites litstarter serve options that do not exist: {sorted(cited - options)}"
    app = (REPO / "src" / "litstarter" / "deploy" / "serve_app.py").read_text()
    for method, route in set(re.findall(r"`(GET|POST) (/\w+)", text)):
        assert f'Route("{route}", ' in app and f'methods=["{method}"]' in app, f"{name} names {method} {route}"
