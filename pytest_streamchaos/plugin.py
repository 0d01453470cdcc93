"""pytest hooks of pytest-streamchaos: options, ini keys, markers, fixtures, SLA checks, summary.

Registered through the ``pytest11`` entry point ``streamchaos``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_streamchaos import settings as _settings
from pytest_streamchaos.faults.marks import marker_lines, specs_for_item
from pytest_streamchaos.faults.spec import KINDS, FaultSpecError
from pytest_streamchaos.stack.fixtures import (  # noqa: F401  (fixtures are found by name)
    kafka,
    spark_cluster,
    spark_cluster_ha,
    streamchaos_kafka_session,
    streamchaos_settings,
    streamchaos_spark_ha_session,
    streamchaos_spark_session,
)

MARKERS = (
    "chaos(ha=False): a chaos test of a streaming job (select with -m chaos); ha=True runs it on a "
    "highly available cluster (two masters + ZooKeeper)",
    "sla(**bounds): SLA bounds checked after the test's chaos run "
    "(max_downtime, max_recovery, max_failure_cost, min_reliability, max_lost, max_duplicates, guarantee)",
    *marker_lines(),
)

SETTINGS_KEY = pytest.StashKey[_settings.Settings]()
FAULTS_KEY = pytest.StashKey[list]()
RUNS_KEY = pytest.StashKey[list]()
ALL_RUNS_KEY = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    _settings.addoptions(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    # Fail on a bad option value now, not at the first fixture.
    config.stash[SETTINGS_KEY] = _settings.Settings.from_config(config)
    config.stash[ALL_RUNS_KEY] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Validate every fault and SLA mark now (collection time), so a typo never starts a stack."""
    from pytest_streamchaos.analysis.sla import SLA

    errors = []
    for item in items:
        try:
            item.stash[FAULTS_KEY] = specs_for_item(item)
        except FaultSpecError as exc:
            errors.append(str(exc))
        for mark in item.iter_markers("sla"):
            try:
                SLA().merged(**mark.kwargs)
            except (TypeError, ValueError) as exc:
                errors.append(f"{item.nodeid}: @sla: {exc}")
    if errors:
        raise pytest.UsageError("invalid fault marks:\n  " + "\n  ".join(errors))


@pytest.fixture
def checkpoint_dir(tmp_path: Path) -> Path:
    """A fresh, empty checkpoint directory for this test's streaming query."""
    path = tmp_path / "checkpoint"
    path.mkdir()
    return path


@pytest.fixture
def chaos(request: pytest.FixtureRequest, kafka: Any, tmp_path: Path,  # noqa: F811
          streamchaos_settings: _settings.Settings) -> Iterator[Any]:  # noqa: F811
    """Runs your streaming job on the stack under load with this test's fault marks:
    ``run = chaos.run("pipelines/enrich.py", rate=500, duration=60, guarantee="exactly-once")``."""
    from pytest_streamchaos.faults.capabilities import get_capabilities
    from pytest_streamchaos.runner import Chaos
    from pytest_streamchaos.workload.seed import resolve_seed

    item = request.node
    mark = item.get_closest_marker("chaos")
    ha = bool(mark.kwargs.get("ha", False)) if mark is not None else False
    # Faults are checked before any JVM starts: a host that cannot run them skips the test at once.
    specs = item.stash.get(FAULTS_KEY, None)
    if specs is None:
        specs = specs_for_item(item)
    caps = None
    for spec in specs:
        if KINDS[spec.kind].network:
            caps = caps or get_capabilities()
            reason = caps.missing(spec.kind)
            if reason:
                pytest.skip(f"@{spec.kind} cannot run on this host: {reason}")
    cluster = request.getfixturevalue("spark_cluster_ha" if ha else "spark_cluster")
    test_dir = Path(str(item.fspath)).parent if getattr(item, "fspath", None) else None
    harness = Chaos(cluster=cluster, kafka=kafka, workdir=tmp_path / "chaos", faults=specs,
                    test_dir=test_dir, rootdir=Path(str(request.config.rootpath)), nodeid=item.nodeid,
                    java_home=streamchaos_settings.java_home,
                    seed=resolve_seed(item.nodeid, streamchaos_settings.seed))
    item.stash[RUNS_KEY] = harness.runs
    yield harness


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After a passing test body, check its runs against ``@pytest.mark.sla`` and the declared
    guarantee: every violated bound is reported at once, with the fault timeline."""
    result = yield
    runs = item.stash.get(RUNS_KEY, [])
    if not runs:
        return result
    bounds: dict[str, Any] = {}
    for sla in reversed(list(item.iter_markers("sla"))):
        bounds.update(sla.kwargs)
    for run in runs:
        errors = run.meta.get("fault_errors") or []
        if errors:  # a fault that never happened makes the run's verdict meaningless
            raise AssertionError("faults of this run did not happen as planned:\n  " + "\n  ".join(errors)
                                 + "\n" + "\n".join(run.timeline_lines()))
        run.assert_sla(**bounds)
    return result


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    if call.when != "teardown":
        return
    runs = item.stash.get(RUNS_KEY, [])
    if runs:
        item.config.stash[ALL_RUNS_KEY].extend((item.nodeid, item.stash[FAULTS_KEY], r) for r in runs)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    from pytest_streamchaos.report.terminal import format_table

    runs = config.stash.get(ALL_RUNS_KEY, [])
    if not runs:
        return
    rows = []
    for nodeid, specs, run in runs:
        row = run.summary_row()
        row["test"] = nodeid.split("::")[-1]
        row["faults"] = ", ".join(s.label for s in specs) or "-"
        rows.append(row)
    terminalreporter.section("streamchaos: chaos runs")
    for line in format_table(rows):
        terminalreporter.write_line(line)
    path = config.stash[SETTINGS_KEY].report
    if path:
        out = [{"test": nodeid, "faults": [s.to_dict() for s in specs], **run.to_dict()}
               for nodeid, specs, run in runs]
        Path(path).write_text(json.dumps(out, indent=1, default=str))
        terminalreporter.write_line(f"streamchaos: wrote {len(out)} run(s) to {path}")
