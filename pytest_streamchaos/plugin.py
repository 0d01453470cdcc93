"""pytest hooks of pytest-streamchaos: options, ini keys, markers, fixtures, terminal summary.

Registered through the ``pytest11`` entry point ``streamchaos``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_streamchaos import settings as _settings
from pytest_streamchaos.faults.marks import marker_lines, specs_for_item
from pytest_streamchaos.faults.spec import FaultSpecError
from pytest_streamchaos.stack.fixtures import (  # noqa: F401  (fixtures are found by name)
    kafka,
    spark_cluster,
    streamchaos_kafka_session,
    streamchaos_settings,
    streamchaos_spark_session,
)

MARKERS = (
    "chaos: a chaos test of a streaming job (select with -m chaos)",
    "sla(**bounds): SLA bounds checked after the test's chaos run "
    "(max_downtime, max_recovery, max_failure_cost, min_reliability, max_lost, max_duplicates, guarantee)",
    *marker_lines(),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    _settings.addoptions(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    # Fail on a bad option value now, not at the first fixture.
    config.stash[SETTINGS_KEY] = _settings.Settings.from_config(config)


SETTINGS_KEY = pytest.StashKey[_settings.Settings]()
FAULTS_KEY = pytest.StashKey[list]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Validate every fault mark now (collection time), so a typo never starts a stack."""
    errors = []
    for item in items:
        try:
            item.stash[FAULTS_KEY] = specs_for_item(item)
        except FaultSpecError as exc:
            errors.append(str(exc))
    if errors:
        raise pytest.UsageError("invalid fault marks:\n  " + "\n  ".join(errors))


@pytest.fixture
def checkpoint_dir(tmp_path: Path) -> Path:
    """A fresh, empty checkpoint directory for this test's streaming query."""
    path = tmp_path / "checkpoint"
    path.mkdir()
    return path
