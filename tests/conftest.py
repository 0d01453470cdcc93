"""Shared test configuration for the project's own tests.

**slow**: a test marked ``slow`` runs only when ``-m`` names ``slow`` (``pytest -m slow``, ``pytest -m
"chaos or slow"``): the default run (``./dev test``, CI) leaves it out, so that the suite stays within CI's
budget on a 2-core machine. Each long scenario keeps one representative in the default run; its other
variants, and the full versions of the papers' experiments, are ``slow`` (docs/setup.md, "Slow tests").
"""

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "slow" in (config.getoption("markexpr", "") or ""):
        return
    drop = [item for item in items if item.get_closest_marker("slow") is not None]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]
