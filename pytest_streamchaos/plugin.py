"""pytest hooks of pytest-streamchaos: options, ini keys, markers, fault-mark validation, fixtures,
SLA checks, JUnit properties.

Registered through the ``pytest11`` entry point ``streamchaos``. The session's state, and the hooks
that collect the results, write the reports and print the summary, are one object registered at
configure time: :class:`~pytest_streamchaos.report.session.ChaosSession`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_streamchaos import backends, events
from pytest_streamchaos import settings as _settings
from pytest_streamchaos.analysis import checkers
from pytest_streamchaos.analysis.judge import Bounds, assert_planned
from pytest_streamchaos.entries import preflights
from pytest_streamchaos.exploration.mark import EXPLORE_KEY, MARKER_LINE
from pytest_streamchaos.exploration.mark import MARK as EXPLORE_MARK
from pytest_streamchaos.exploration.plugin import PLUGIN_NAME as EXPLORE_PLUGIN
from pytest_streamchaos.exploration.plugin import ExplorePlugin
from pytest_streamchaos.faults.marks import marker_lines, specs_for_item
from pytest_streamchaos.faults.registry import KINDS, check_stack, kind_of
from pytest_streamchaos.faults.spec import FaultSpecError
from pytest_streamchaos.mark_checks import mark_errors, registered_marks
from pytest_streamchaos.report.baseline import Storage, check_gates, parse_gates
from pytest_streamchaos.report.session import (
    COMPARISONS_KEY,
    EXPLORED_KEY,
    FAULTS_KEY,
    PLUGIN_NAME,
    RUNS_KEY,
    ChaosSession,
    chaos_session,
    junit_properties,
)
from pytest_streamchaos.stack.fixtures import (  # noqa: F401  (fixtures are found by name)
    kafka,
    progress_writer,
    service_fixtures,
    spark_cluster,
    spark_cluster_ha,
    streamchaos_host,
    streamchaos_kafka_session,
    streamchaos_settings,
    streamchaos_spark_session,
    streamchaos_stacks,
)

if TYPE_CHECKING:  # the fixture's type; the harness itself is imported when a test asks for it
    from pytest_streamchaos.analysis.repeat import RepeatedRun
    from pytest_streamchaos.analysis.result import ChaosRun
    from pytest_streamchaos.harness import ChaosFixture
    from pytest_streamchaos.runner.reference import References
    from pytest_streamchaos.runner.shared import SharedHistories
    from pytest_streamchaos.stack.base import KafkaCluster

MARKERS = (
    "chaos(ha=False, repeat=1, backend=None, spark=None, sequence=False): a chaos test of a streaming job (select "
    "with -m chaos); ha=True runs it on a highly available cluster (two masters + ZooKeeper); repeat=N runs each "
    "scenario N times (medians, spread); backend='docker' or 'local' runs it on that stack whatever --chaos-backend "
    "says; spark='yarn' or 'standalone' on that cluster manager whatever --chaos-spark says; sequence=True: its "
    "fault marks are a sequence, each fault firing once the one before it healed and judged in its own window "
    "(run.windows; refused at collection when one would fire before the one before it healed)",
    "sla(**bounds): SLA bounds checked after the test's chaos run "
    "(max_downtime, max_recovery, max_failure_cost, min_reliability, max_lost, max_duplicates, guarantee); "
    "repeated runs are judged on the worst run, or over='median'",
    MARKER_LINE,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    _settings.addoptions(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Markers; the settings, checked now (a bad option value fails before the first fixture); the
    session's :class:`~pytest_streamchaos.report.session.ChaosSession`, registered as a plugin."""
    for line in (*MARKERS, *marker_lines()):  # the fault kinds' as the registry has them now
        config.addinivalue_line("markers", line)
    events.add_kinds(backends.timeline_kinds())  # the backends' own timeline kinds, and their checks
    checkers.add_checks(backends.check_makers())
    _settings.check_ini_keys(config)
    settings = _settings.Settings.from_config(config)
    # the stack fixtures (stack/fixtures.py) read the settings from here
    config.stash[_settings.SETTINGS_KEY] = settings
    if settings.kafka_bootstrap and not config.option.help and not config.option.collectonly:
        _check_kafka(settings)
    if settings.backend == "docker" and not config.option.help and not config.option.collectonly:
        _check_docker(settings.docker_image)
    if not config.option.help and not config.option.collectonly:
        _check_backends(settings)
    try:
        gates = parse_gates(settings.compare_fail)
        check_gates(gates)
    except ValueError as exc:
        raise pytest.UsageError(f"--chaos-compare-fail / ini streamchaos_compare_fail: {exc}") from None
    if not config.option.help:
        _check_baseline(config, settings, bool(gates))
    config.pluginmanager.register(ChaosSession(settings, gates), PLUGIN_NAME)
    config.pluginmanager.register(ExplorePlugin(config, settings, check_sla), EXPLORE_PLUGIN)
    # each storage's service fixture (``hdfs``, ``object_store``), made from its registry entry
    config.pluginmanager.register(service_fixtures(), SERVICES_PLUGIN)


#: the name of the plugin that holds the storages' service fixtures
SERVICES_PLUGIN = "streamchaos-services"


def pytest_unconfigure(config: pytest.Config) -> None:
    for name in (PLUGIN_NAME, EXPLORE_PLUGIN, SERVICES_PLUGIN):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


def _check_baseline(config: pytest.Config, settings: _settings.Settings, gated: bool) -> None:
    """``--chaos-compare`` (or ``--chaos-compare-fail``, which compares with the latest) naming a baseline that is
    not saved: one line listing the saved ones, before the runs rather than after them (unless the session saves
    the first one, ``--chaos-save``)."""
    which = settings.compare or (_settings.LATEST if gated else "")
    if not which or (settings.save and which == _settings.LATEST):
        return  # the session saves one (the first baseline of a CI set up with gates): compared at its end
    try:
        Storage(Path(str(config.rootpath)) / settings.storage).find(which)
    except FileNotFoundError as exc:
        flag = "--chaos-compare" if settings.compare else "--chaos-compare-fail (compares with the latest baseline)"
        raise pytest.UsageError(f"{flag}: {exc}") from None


def _check_docker(image: str) -> None:
    """``--chaos-backend docker`` with no daemon, or with an image that is absent and cannot be pulled:
    one line naming the fix, before anything starts."""
    from pytest_streamchaos.stack.base import StackError
    from pytest_streamchaos.stack.docker import images
    from pytest_streamchaos.stack.docker.engine import connect

    try:
        client = connect()
        try:
            if image:
                images.resolve(client, image)
        finally:
            client.close()
    except StackError as exc:
        raise pytest.UsageError(f"--chaos-backend docker: {exc}") from None


def _check_backends(settings: _settings.Settings) -> None:
    """Every backend's preflight (its registry entry's: ``--chaos-yarn-conf`` naming a ResourceManager that does
    not answer): one line naming the fix, before anything starts."""
    for check in preflights(backends.entries()):
        line = check(settings)
        if line:
            raise pytest.UsageError(line)


def _check_kafka(settings: _settings.Settings) -> None:
    """``--chaos-kafka-bootstrap`` that no Kafka answers at (or on the docker backend, whose containers would
    not reach it): one line naming the fix, before anything starts."""
    from pytest_streamchaos.stack.base import StackError
    from pytest_streamchaos.stack.kraft.attached import attach_kafka

    if settings.backend == "docker":
        raise pytest.UsageError("--chaos-kafka-bootstrap: an existing Kafka is for the local backend (the docker "
                                "backend's jobs reach only its own brokers); fix: leave out --chaos-backend docker")
    try:
        attach_kafka(settings.kafka_bootstrap).stop()
    except StackError as exc:
        raise pytest.UsageError(f"--chaos-kafka-bootstrap: {exc}") from None


def faults_kafka_links(items: list[pytest.Item]) -> bool:
    """Whether a test among ``items`` has a fault mark on the job's Kafka links: only then is Toxiproxy built
    for the session's Kafka (``@explore`` explores no network fault). Without it those links go direct,
    where a network fault would act on the brokers' job listeners instead (stack/kraft/links.py)."""
    from pytest_streamchaos.stack.capabilities import KafkaLinks

    return any(KafkaLinks in kind_of(spec).capabilities(spec) for item in items
               for spec in item.stash.get(FAULTS_KEY, []))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Validate every fault, chaos and SLA mark now (collection time), and refuse a mark that misspells one of
    the plugin's, so a typo never starts a stack (:mod:`~pytest_streamchaos.mark_checks`); note whether a test
    may fault the job's Kafka links (:func:`faults_kafka_links`)."""
    errors = []
    settings = chaos_session(config).settings
    registered = registered_marks(config)
    ours = ["chaos", "sla", EXPLORE_MARK, *KINDS]
    for item in items:
        try:
            item.stash[FAULTS_KEY] = specs_for_item(item)
        except FaultSpecError as exc:
            errors.append(str(exc))
        errors += mark_errors(item, settings, registered, ours)
        errors += [f"{item.nodeid}: @chaos(sequence=True): {why}" for why in _sequence_errors(item)]
    if errors:
        raise pytest.UsageError("invalid fault marks:\n  " + "\n  ".join(errors))
    config.stash[_settings.KAFKA_LINKS_KEY] = faults_kafka_links(items)


def _sequence_errors(item: pytest.Item) -> list[str]:
    """Why the test's fault marks are not the sequence its ``@pytest.mark.chaos(sequence=True)`` says: a fault
    that would fire before the one before it healed (both named), a ``sequence`` that is not a bool."""
    mark = item.get_closest_marker("chaos")
    sequence = mark.kwargs.get("sequence", False) if mark is not None else False
    if not isinstance(sequence, bool):
        return [f"sequence={sequence!r} must be True or False"]
    specs = item.stash.get(FAULTS_KEY, None)
    if not sequence or not specs:
        return []
    from pytest_streamchaos.faults.timeline import sequence_conflicts

    return sequence_conflicts(specs, lambda spec: kind_of(spec).permanent(spec))


def in_sequence(item: pytest.Item) -> bool:
    """Whether the test's faults are a sequence (``@pytest.mark.chaos(sequence=True)``)."""
    mark = item.get_closest_marker("chaos")
    return bool(mark is not None and mark.kwargs.get("sequence", False))


@pytest.fixture
def checkpoint_dir(tmp_path: Path) -> Path:
    """A fresh, empty checkpoint directory for this test's streaming query."""
    path = tmp_path / "checkpoint"
    path.mkdir()
    return path


@pytest.fixture
def chaos(request: pytest.FixtureRequest, kafka: KafkaCluster, tmp_path: Path,  # noqa: F811
          streamchaos_settings: _settings.Settings) -> Iterator[ChaosFixture]:  # noqa: F811
    """Runs your streaming job on the stack under load with this test's fault marks:
    ``run = chaos.run("pipelines/enrich.py", rate=500, duration=60, guarantee="exactly-once")``; its type,
    for an annotation an editor and mypy check the call by, is ``pytest_streamchaos.ChaosFixture``."""
    from pytest_streamchaos.harness import ChaosFixture
    from pytest_streamchaos.report.progress import status_for
    from pytest_streamchaos.workload.seed import resolve_seed

    item = request.node
    mark = item.get_closest_marker("chaos")
    ha = bool(mark.kwargs.get("ha", False)) if mark is not None else False
    repeat = int(mark.kwargs.get("repeat", streamchaos_settings.repeat)) if mark is not None \
        else streamchaos_settings.repeat
    # Faults are checked before any JVM starts: a host that cannot run them skips the test at once.
    specs = item.stash.get(FAULTS_KEY, None)
    if specs is None:
        specs = specs_for_item(item)
    for spec in specs:
        reason = kind_of(spec).unavailable(spec)
        if reason:
            pytest.skip(f"@{spec.kind} cannot run on this host: {reason}")
    cluster = request.getfixturevalue("spark_cluster_ha" if ha else "spark_cluster")
    try:  # a capability this cluster lacks (an attached YARN's daemons): before the job starts
        check_stack(specs, cluster, kafka)
    except ValueError as why:
        pytest.fail(str(why), pytrace=False)
    test_dir = Path(str(item.fspath)).parent if getattr(item, "fspath", None) else None
    harness = ChaosFixture(cluster=cluster, kafka=kafka, workdir=tmp_path / "chaos", faults=specs,
                           test_dir=test_dir, rootdir=Path(str(request.config.rootpath)), nodeid=item.nodeid,
                           java_home=streamchaos_settings.java_home, jit=streamchaos_settings.jit,
                           repeat=repeat,
                           seed=resolve_seed(item.nodeid, streamchaos_settings.seed),
                           status=status_for(request.config, item.nodeid),
                           progress=progress_writer(request.config),
                           checkpoint=streamchaos_settings.checkpoint,
                           fixture=request.getfixturevalue,
                           references=session_references(request.config, streamchaos_settings),
                           shared=(request.getfixturevalue("streamchaos_shared_history")
                                   if streamchaos_settings.history == "shared" else None))
    item.stash[RUNS_KEY] = harness.results
    item.stash[COMPARISONS_KEY] = harness.comparisons
    try:
        yield harness
    finally:  # an @explore history still running when the test ends: its job stopped before the next test
        harness.close_history()


@pytest.fixture(scope="module")
def streamchaos_shared_history(request: pytest.FixtureRequest,
                               tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedHistories]:
    """The module's shared history (``--chaos-history=shared``, docs/shared-history.md): its tests' plain runs of
    one job on one running job. When the module ends it is judged on the whole, and a failure there is an error
    of its last test's teardown; the module's own fixtures are torn down after it (a fixture that clears the
    job's paths at the module's end does so once the job has stopped)."""
    from pytest_streamchaos.runner.shared import SHARED_KEY, SharedHistories

    shared = SharedHistories(tmp_path_factory.mktemp("shared-history"))
    request.config.stash.setdefault(SHARED_KEY, []).append(shared)
    yield shared
    shared.finish()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that uses the stack without the ``chaos`` fixture ends a shared history first: its own faults or
    load would strike the shared job between two windows."""
    from pytest_streamchaos.runner.shared import SHARED_KEY

    names = getattr(item, "fixturenames", ())
    if "streamchaos_stacks" in names and "chaos" not in names:
        for shared in item.config.stash.get(SHARED_KEY, []):
            shared.end(f"{item.nodeid} uses the stack without chaos")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How the session's shared histories went (``--chaos-history=shared``): one line each."""
    from pytest_streamchaos.runner.shared import SHARED_KEY

    lines = [line for shared in terminalreporter.config.stash.get(SHARED_KEY, [])
             for line in shared.accounts + shared.alone]
    if not lines:
        return
    terminalreporter.section("streamchaos: shared histories (--chaos-history=shared)")
    for line in lines:
        terminalreporter.write_line(line, red=line.startswith("FAILED"))


def session_references(config: pytest.Config, settings: _settings.Settings) -> References:
    """The session's reference runs (one per job and input), kept in pytest's cache across sessions
    (``--chaos-fresh-reference`` refuses what is kept there)."""
    from pytest_streamchaos.runner.reference import REFERENCES_KEY, References

    found = config.stash.get(REFERENCES_KEY, None)
    if found is None:
        found = config.stash[REFERENCES_KEY] = References.for_config(config, settings.fresh_reference,
                                                                     dataclasses.asdict(settings))
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After a passing test body, judge its runs by the plan of the test (the one judge,
    :func:`~pytest_streamchaos.analysis.judge.assert_planned`): faults that did not happen as planned, then
    ``@pytest.mark.sla`` and the declared guarantee, every violated bound reported at once, with the fault
    timeline. (An explored test's runs were checked one by one, as part of its property.)"""
    result = yield
    runs = item.stash.get(RUNS_KEY, [])
    if runs and EXPLORE_KEY not in item.stash:
        assert_planned(runs, sla_bounds(item))
    return result


def sla_bounds(item: pytest.Item) -> Bounds:
    """The test's ``@pytest.mark.sla`` bounds, the closest mark last, and whether its faults are a sequence."""
    return Bounds.of([m.kwargs for m in reversed(list(item.iter_markers("sla")))], sequence=in_sequence(item))


def check_sla(item: pytest.Item, runs: Sequence[ChaosRun | RepeatedRun]) -> None:
    """The test's ``@pytest.mark.sla`` bounds and each run's declared guarantee (AssertionError); an explored
    body's, whose faults are the search's to judge."""
    assert_planned(runs, sla_bounds(item), faults=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed chaos test's report carries a ``chaos run`` section: what its runs did and why
    (:mod:`~pytest_streamchaos.report.failure`), shown beside the assertion, also under ``-q``."""
    report = yield
    if report.when == "call" and report.failed and EXPLORED_KEY in item.stash:
        from pytest_streamchaos.report.failure import TITLE

        # the explored failure's text already holds the run that decided: said once, referred to here
        report.sections.append((TITLE, "the run that decided the search is described in the failure above "
                                       "(after its first lines), with the search's coverage and replay line"))
    elif report.when == "call" and report.failed:
        runs = item.stash.get(RUNS_KEY, [])
        if runs:
            from pytest_streamchaos.report.failure import TITLE, failure_section

            try:
                text = failure_section(runs)
            except Exception as exc:  # the account of a failure must never fail the session itself
                text = f"(the account of this test's chaos runs could not be made: {exc!r})"
            report.sections.append((TITLE, text))
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Headline metrics as JUnit XML properties (``--junitxml``), before the teardown report copies
    ``user_properties``, so that CI dashboards show them per test."""
    results = item.stash.get(RUNS_KEY, [])
    for index, result in enumerate(results):
        item.user_properties.extend(junit_properties(result, index))
