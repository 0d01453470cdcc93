"""Example chaos tests: every test here is marked ``chaos`` and runs a real job on the embedded stack.

Rates and durations are kept small: on a 2-core machine a driver, two executors and the stack share
the CPU. Each test prints its run's report (``pytest -s`` shows it).
"""

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/chaos/" in item.nodeid.replace("\\", "/") and item.get_closest_marker("chaos") is None:
            raise pytest.UsageError(f"{item.nodeid}: tests in tests/chaos must be marked @pytest.mark.chaos")
