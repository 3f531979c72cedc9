"""The docs cite only `litstarter serve` options and routes that exist (here, so it leaves with deploy/)."""

from __future__ import annotations

import re

import pytest

from tests.helpers import REPO

PAGES = {
    p.relative_to(REPO).as_posix(): p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
}


@pytest.mark.parametrize("name", list(PAGES))
def test_serve_options_and_routes_in_the_docs_exist(name: str) -> None:
    build_parser = pytest.importorskip("litstarter.extras.serve.command", reason="deploy/ was deleted").build_parser

    text = PAGES[name]
    options = {a for action in build_parser()._actions for a in action.option_strings}
    commands = re.findall(r"litstarter serve ([^`\n]*)", text)
    cited = {o for command in commands for o in re.findall(r"(--\w+)", command)}
    if name == "docs/serve.md":  # the page explains options in prose too: `--max_batch_size 1`
        cited |= set(re.findall(r"`(--\w+)", text))
        assert {"--max_batch_size", "--batch_timeout", "--workers", "--request_timeout"} <= cited
    assert cited <= options, f"{name} cites litstarter serve options that do not exist: {sorted(cited - options)}"
    app = pytest.importorskip("litstarter.extras.serve.app")
    from litstarter.extras.serve.options import ServeOptions

    served = {(m, r.path) for r in app.create_app(list, ServeOptions(), "model").routes for m in r.methods}
    for method, route in set(re.findall(r"`(GET|POST) (/[\w/{}]*)", text)):
        assert (method, route) in served, f"{name} names {method} {route}, which the server does not route"
