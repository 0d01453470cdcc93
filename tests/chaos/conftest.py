"""Example chaos tests: every test here is marked ``chaos`` and runs a real job on the embedded stack.

Rates and durations are kept small: on a 2-core machine a driver, two executors and the stack share
the CPU. Each test prints its run's report (``pytest -s`` shows it).
"""

import json
from collections.abc import Callable
from typing import Any

import pytest

from pytest_streamchaos.report.session import FAULTS_KEY


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/chaos/" in item.nodeid.replace("\\", "/") and item.get_closest_marker("chaos") is None:
            raise pytest.UsageError(f"{item.nodeid}: tests in tests/chaos must be marked @pytest.mark.chaos")


@pytest.fixture(scope="session")
def _shared_runs() -> dict[str, Any]:
    return {}


@pytest.fixture
def shared_run(request: pytest.FixtureRequest, chaos: Any, _shared_runs: dict[str, Any]) -> Callable[..., Any]:
    """``chaos.run``, once per scenario and session: tests that assert different things about the same
    scenario (the same fault marks, ``@chaos`` mark arguments -- backend, ha, repeat --, job and
    ``chaos.run`` arguments) share one run. The first test that asks runs it; a later one gets the same
    ``ChaosRun`` (recorded among its own results, so the plugin checks its declared guarantee and fault
    errors too). Run alone, every test runs the scenario itself, so its verdict never depends on which
    tests were selected; only the workload seed (per test id) is the first test's."""
    specs = request.node.stash.get(FAULTS_KEY, [])
    mark = request.node.get_closest_marker("chaos")
    scenario = [[s.to_dict() for s in specs], dict(mark.kwargs) if mark is not None else {}]

    def run(job: Any, **kwargs: Any) -> Any:
        key = json.dumps([*scenario, str(job), kwargs], sort_keys=True, default=repr)
        if key in _shared_runs:
            result = _shared_runs[key]
            chaos.results.append(result)
            return result
        result = _shared_runs[key] = chaos.run(job, **kwargs)
        return result

    return run
