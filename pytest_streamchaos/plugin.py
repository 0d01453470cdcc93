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
    hdfs,
    kafka,
    progress_writer,
    spark_cluster,
    spark_cluster_ha,
    streamchaos_kafka_session,
    streamchaos_settings,
    streamchaos_spark_session,
    streamchaos_stacks,
)

MARKERS = (
    "chaos(ha=False, repeat=1, backend=None): a chaos test of a streaming job (select with -m chaos); ha=True runs "
    "it on a highly available cluster (two masters + ZooKeeper); repeat=N runs each scenario N times (medians, "
    "spread); backend='docker' or 'local' runs it on that stack whatever --chaos-backend says",
    "sla(**bounds): SLA bounds checked after the test's chaos run "
    "(max_downtime, max_recovery, max_failure_cost, min_reliability, max_lost, max_duplicates, guarantee); "
    "repeated runs are judged on the worst run, or over='median'",
    *marker_lines(),
)

SETTINGS_KEY = _settings.SETTINGS_KEY
FAULTS_KEY = pytest.StashKey[list]()
#: the test's results: what each ``chaos.run`` returned (ChaosRun or RepeatedRun). Test seam: a
#: test (or a fake ``chaos`` fixture) may append runs it built itself, e.g. from analysis.synthetic
RUNS_KEY = pytest.StashKey[list]()
#: the test's A/B comparisons (``chaos.compare``)
COMPARISONS_KEY = pytest.StashKey[list]()
#: (nodeid, index, faults, result) of every result of the session
ALL_RUNS_KEY = pytest.StashKey[list]()
ALL_COMPARISONS_KEY = pytest.StashKey[list]()
GATES_KEY = pytest.StashKey[list]()
OUTCOME_KEY = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    _settings.addoptions(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    # Fail on a bad option value now, not at the first fixture.
    settings = config.stash[SETTINGS_KEY] = _settings.Settings.from_config(config)
    config.stash[ALL_RUNS_KEY] = []
    config.stash[ALL_COMPARISONS_KEY] = []
    config.stash[OUTCOME_KEY] = {}
    from pytest_streamchaos.report.baseline import parse_gates

    if settings.backend == "docker" and not config.option.help and not config.option.collectonly:
        _check_docker(settings.docker_image)
    try:
        config.stash[GATES_KEY] = parse_gates(settings.compare_fail)
    except ValueError as exc:
        raise pytest.UsageError(f"--chaos-compare-fail / ini streamchaos_compare_fail: {exc}") from None


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
            bounds = dict(mark.kwargs)
            over = bounds.pop("over", "worst")
            try:
                SLA().merged(**bounds)
                if over not in ("worst", "median"):
                    raise ValueError(f"over={over!r}: use 'worst' (the default) or 'median'")
            except (TypeError, ValueError) as exc:
                errors.append(f"{item.nodeid}: @sla: {exc}")
        for mark in item.iter_markers("chaos"):
            repeat = mark.kwargs.get("repeat", 1)
            if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
                errors.append(f"{item.nodeid}: @chaos: repeat={repeat!r} must be an int >= 1")
            backend = mark.kwargs.get("backend", config.stash[SETTINGS_KEY].backend)
            if backend not in _settings.BACKENDS:
                errors.append(f"{item.nodeid}: @chaos: backend={backend!r}: valid backends: "
                              f"{', '.join(map(repr, _settings.BACKENDS))}")
    if errors:
        raise pytest.UsageError("invalid fault marks:\n  " + "\n  ".join(errors))


def needs_host_network(spec: Any) -> bool:
    """Whether a fault needs the host's network machinery (iptables, tc, NFQUEUE): every network fault
    but those on the job's Kafka links, which the stack's Toxiproxy carries (packet loss excepted:
    Toxiproxy has no loss toxic), and the cut between brokers."""
    if spec.kind == "isolate_broker":
        return True
    if not KINDS[spec.kind].network:
        return False
    kafka_link = str(spec.target or "kafka").split("-")[0] in ("kafka", "broker")
    return not kafka_link or spec.kind == "packet_loss"


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
    from pytest_streamchaos.harness import ChaosHarness
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
    caps = None
    for spec in specs:
        if needs_host_network(spec):
            caps = caps or get_capabilities()
            reason = caps.missing(spec.kind)
            if reason:
                pytest.skip(f"@{spec.kind} cannot run on this host: {reason}")
    cluster = request.getfixturevalue("spark_cluster_ha" if ha else "spark_cluster")
    test_dir = Path(str(item.fspath)).parent if getattr(item, "fspath", None) else None
    harness = ChaosHarness(cluster=cluster, kafka=kafka, workdir=tmp_path / "chaos", faults=specs,
                           test_dir=test_dir, rootdir=Path(str(request.config.rootpath)), nodeid=item.nodeid,
                           java_home=streamchaos_settings.java_home, jit=streamchaos_settings.jit,
                           repeat=repeat,
                           seed=resolve_seed(item.nodeid, streamchaos_settings.seed),
                           status=status_for(request.config, item.nodeid),
                           progress=progress_writer(request.config),
                           checkpoint=streamchaos_settings.checkpoint,
                           hdfs=lambda: request.getfixturevalue("hdfs"))
    item.stash[RUNS_KEY] = harness.results
    item.stash[COMPARISONS_KEY] = harness.comparisons
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
    over = bounds.pop("over", "worst")
    for result_ in runs:
        for run in getattr(result_, "runs", None) or [result_]:
            errors = run.meta.get("fault_errors") or []
            if errors:  # a fault that never happened makes the run's verdict meaningless
                raise AssertionError("faults of this run did not happen as planned:\n  " + "\n  ".join(errors)
                                     + "\n" + "\n".join(run.timeline_lines()))
        if hasattr(result_, "worst_run"):  # repeated: the worst run by default (an SLA holds for every run)
            result_.assert_sla(over=over, **bounds)
        else:
            result_.assert_sla(**bounds)
    return result


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Headline metrics as JUnit XML properties (``--junitxml``), before the teardown report copies
    ``user_properties``, so that CI dashboards show them per test."""
    from pytest_streamchaos.report.session import junit_properties

    for index, result in enumerate(item.stash.get(RUNS_KEY, [])):
        item.user_properties.extend(junit_properties(result, index))


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    if call.when != "teardown":
        return
    runs = item.stash.get(RUNS_KEY, [])
    specs = [{**s.to_dict(), "label": s.label} for s in item.stash.get(FAULTS_KEY, [])]
    item.config.stash[ALL_RUNS_KEY].extend((item.nodeid, i, specs, r) for i, r in enumerate(runs))
    item.config.stash[ALL_COMPARISONS_KEY].extend((item.nodeid, v) for v in item.stash.get(COMPARISONS_KEY, []))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Compare with the baseline (failing the session on a gate), then save, then write the report
    directory; the terminal summary prints what happened."""
    from pytest_streamchaos.report import session as rs

    config = session.config
    st = config.stash[SETTINGS_KEY]
    entries = config.stash.get(ALL_RUNS_KEY, [])
    outcome = config.stash[OUTCOME_KEY]
    gates = config.stash[GATES_KEY]
    if not entries or getattr(config, "workerinput", None) is not None:  # xdist workers: the controller does it
        return
    which = st.compare or (_settings.LATEST if gates else "")
    if st.save or which:
        from pytest_streamchaos.report import baseline as bl
        from pytest_streamchaos.report import envinfo

        env = envinfo.environment(Path(str(config.rootpath)), st.java_home)
        storage = bl.Storage(Path(str(config.rootpath)) / st.storage)
        if which:
            try:
                outcome["compare"] = rs.compare_with_baseline(storage, which, entries, gates, env)
            except (FileNotFoundError, ValueError) as exc:
                outcome["compare_error"] = str(exc)
                if gates:  # a gate that cannot be checked must not pass silently
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
            else:
                if outcome["compare"].regressions:
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if st.save:
            name = bl.default_name(env) if st.save == _settings.AUTO else st.save
            outcome["saved"] = storage.save(bl.session_doc(entries, env), name)
    if st.report_dir:
        from pytest_streamchaos.report import plots

        draw = plots.available()
        outcome["artifacts"] = rs.write_artifacts(Path(str(config.rootpath)) / st.report_dir, entries,
                                                  config.stash[ALL_COMPARISONS_KEY], draw)
        outcome["draw"] = draw


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    from pytest_streamchaos.report.terminal import format_table

    runs = config.stash.get(ALL_RUNS_KEY, [])
    if not runs:
        return
    rows = []
    for nodeid, _index, specs, run in runs:
        row = run.summary_row()
        row["test"] = nodeid.split("::")[-1]
        labels = run.meta.get("faults") if "faults" in run.meta else [s.get("label", s["kind"]) for s in specs]
        row["faults"] = ", ".join(labels) or "-"
        rows.append(row)
    terminalreporter.section("streamchaos: chaos runs")
    for line in format_table(rows):
        terminalreporter.write_line(line)
    if any(len(getattr(r, "runs", [])) > 1 for *_, r in runs):
        terminalreporter.write_line("(repeated runs: median (min-max) over the repeats)")
    path = config.stash[SETTINGS_KEY].report
    if path:
        out = [{"test": nodeid, "faults": specs, **run.to_dict()} for nodeid, _index, specs, run in runs]
        Path(path).write_text(json.dumps(out, indent=1, default=str))
        terminalreporter.write_line(f"streamchaos: wrote {len(out)} run(s) to {path}")
    for nodeid, v in config.stash.get(ALL_COMPARISONS_KEY, []):
        terminalreporter.section(f"streamchaos: {nodeid.split('::')[-1]}: {v.labels[1]} versus {v.labels[0]}", sep="-")
        for line in v.describe().splitlines()[1:]:
            terminalreporter.write_line(line)
    _summary_outcome(terminalreporter, config.stash[OUTCOME_KEY])


def _summary_outcome(tr: Any, outcome: dict[str, Any]) -> None:
    """Baseline comparison, gate failures, saved baseline and report files, as found at sessionfinish."""
    from pytest_streamchaos.report.plots import MISSING

    if "compare" in outcome or "compare_error" in outcome:
        tr.section("streamchaos: compared with the baseline", sep="-")
        if "compare_error" in outcome:
            tr.write_line(f"streamchaos: cannot compare: {outcome['compare_error']}", red=True)
        else:
            for line in outcome["compare"].lines:
                tr.write_line(line, red="REGRESSION" in line)
            regs = outcome["compare"].regressions
            if regs:
                tr.write_line(f"streamchaos: {len(regs)} regression(s) beyond --chaos-compare-fail; the session "
                              "fails:", red=True, bold=True)
                for r in regs:
                    tr.write_line(f"  {r}", red=True)
    if "saved" in outcome:
        tr.write_line(f"streamchaos: saved the baseline {outcome['saved']}")
    if "artifacts" in outcome:
        arts, pics = outcome["artifacts"]
        if not outcome.get("draw"):
            tr.write_line(MISSING)
        for a in arts:
            files = ", ".join(str(p) for p in [a.json, *a.pictures])
            tr.write_line(f"streamchaos: {a.test}{f' [run {a.index}]' if a.index else ''}: {files}")
        for p in pics:
            tr.write_line(f"streamchaos: comparison picture: {p}")
