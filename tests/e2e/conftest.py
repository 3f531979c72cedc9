"""Everything under tests/e2e/ is an end-to-end test (full fits, exports, subprocesses, several processes): slow.

`make test-fast` leaves these out; `make test` runs them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

E2E = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if E2E in Path(item.path).parents:
            item.add_marker(pytest.mark.slow)
