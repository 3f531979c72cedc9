"""Repository hygiene: workflows pass actionlint, ruff reports nothing, pre-commit has its hooks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.helpers import REPO

BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = BIN / name
    found = str(path) if path.exists() else shutil.which(name)
    assert found, f"{name} is not installed; run `make install`"
    return found


def test_github_workflows_pass_actionlint() -> None:
    workflows = sorted((REPO / ".github" / "workflows").glob("*.yml"))
    assert workflows, "no workflows under .github/workflows"
    proc = subprocess.run(
        [_tool("actionlint"), *map(str, workflows)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ci = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    matrix = ci["jobs"]["test"]["strategy"]["matrix"]["python-version"]
    assert matrix == ["3.10", "3.11", "3.12"]


def test_ruff_reports_nothing() -> None:
    ruff = _tool("ruff")
    paths = ["src", "tests", "benchmarks", "examples", "scripts"]
    # --no-cache: a cache from an earlier run (another layout of src/) must not vouch for files it saw then.
    for args in (["check", "--no-cache", *paths], ["format", "--check", "--no-cache", *paths]):
        proc = subprocess.run([ruff, *args], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"ruff {' '.join(args)}:\n{proc.stdout}{proc.stderr}"


def test_pre_commit_config_has_the_hooks() -> None:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = {hook["id"] for repo in config["repos"] for hook in repo["hooks"]}
    assert {"ruff", "ruff-format", "nbstripout", "check-yaml", "end-of-file-fixer"} <= hooks


def test_dependabot_and_issue_templates_exist() -> None:
    dependabot = yaml.safe_load((REPO / ".github" / "dependabot.yml").read_text())
    assert {u["package-ecosystem"] for u in dependabot["updates"]} >= {"pip", "github-actions"}
    templates = {p.name for p in (REPO / ".github" / "ISSUE_TEMPLATE").glob("*.yml")}
    assert {"bug_report.yml", "feature_request.yml"} <= templates


def test_ci_runs_make_test_as_ci_run_does_and_make_test_installs_no_system_packages() -> None:
    ci = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    runs = [step.get("run", "").split("#")[0].strip() for step in ci["jobs"]["test"]["steps"]]
    assert ".ci/run" in runs, f"the test job runs {runs}, not .ci/run (make test)"
    assert "make test" in (REPO / ".ci" / "run").read_text()
    makefile = (REPO / "Makefile").read_text()
    assert "apt-get" not in makefile and "sudo" not in makefile, "make test must not install system packages"
