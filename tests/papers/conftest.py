"""The five papers' central experiments (docs/papers.md): every test here is marked ``papers`` and
``chaos``. Each paper has a short version and full versions, all marked ``slow`` (./dev test's budget:
docs/setup.md#slow-tests), which run only when ``-m`` names ``slow`` (``pytest tests/papers -m slow``; the rule
is tests/conftest.py's): they take minutes each on the 2-core machine and would blow CI's budget."""

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/papers/" not in item.nodeid.replace("\\", "/"):
            continue
        for needed in ("papers", "chaos"):
            if item.get_closest_marker(needed) is None:
                raise pytest.UsageError(f"{item.nodeid}: tests in tests/papers must be marked @pytest.mark.{needed}")
