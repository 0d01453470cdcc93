"""pytest hooks of pytest-streamchaos: options, ini keys, markers, fixtures, terminal summary.

Registered through the ``pytest11`` entry point ``streamchaos``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_streamchaos import settings as _settings
from pytest_streamchaos.stack.fixtures import (  # noqa: F401  (fixtures are found by name)
    kafka,
    spark_cluster,
    streamchaos_kafka_session,
    streamchaos_settings,
    streamchaos_spark_session,
)

MARKERS = (
    "chaos: a chaos test of a streaming job (select with -m chaos)",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    _settings.addoptions(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    # Fail on a bad option value now, not at the first fixture.
    config.stash[SETTINGS_KEY] = _settings.Settings.from_config(config)


SETTINGS_KEY = pytest.StashKey[_settings.Settings]()


@pytest.fixture
def checkpoint_dir(tmp_path: Path) -> Path:
    """A fresh, empty checkpoint directory for this test's streaming query."""
    path = tmp_path / "checkpoint"
    path.mkdir()
    return path
