"""The plugin's state for one pytest session and what it does with the session's finished runs.

:class:`ChaosSession` is registered as a plugin by ``plugin.pytest_configure`` (as pytest's junitxml
registers its ``LogXML``): it holds the settings, the regression gates and every result, and its
hooks collect each test's results, write every file at session end and print the summary.
Per-test data lives on the test item (``item.stash``, pytest's per-item store) under the keys below.

Each entry is ``(nodeid, index, faults, result)``: ``index`` counts the results of one test (a test
may call ``chaos.run`` more than once), ``result`` is a ``ChaosRun`` or a ``RepeatedRun``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_streamchaos import settings as _settings
from pytest_streamchaos.analysis.metrics import NotMeasured, NotRecovered
from pytest_streamchaos.analysis.repeat import RepeatedRun
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.versus import Runs, Versus
from pytest_streamchaos.jsonfile import write_json
from pytest_streamchaos.report import baseline as bl
from pytest_streamchaos.report import envinfo, plots
from pytest_streamchaos.report.terminal import format_table

#: one result of the session: the test, its index among the test's runs, its fault marks (JSON), the result
Entry = tuple[str, int, list[dict[str, Any]], ChaosRun | RepeatedRun]

#: the name :class:`ChaosSession` is registered under (``config.pluginmanager.get_plugin``)
PLUGIN_NAME = "streamchaos-session"
#: a test's fault specs, validated at collection
FAULTS_KEY = pytest.StashKey[list]()
#: the test's results: what each ``chaos.run`` returned (ChaosRun or RepeatedRun: an outcome over its runs,
#: ``runs`` and ``worst_run``, either way). Test seam: a
#: test (or a fake ``chaos`` fixture) may put there runs it built itself, e.g. from tests/unit/synthetic.py
RUNS_KEY = pytest.StashKey[list[ChaosRun | RepeatedRun]]()
#: the test's A/B comparisons (``chaos.compare``)
COMPARISONS_KEY = pytest.StashKey[list]()
#: where an explored test keeps what its search gave (``exploration.item.Explored``)
EXPLORED_KEY = pytest.StashKey[Any]()


def chaos_session(config: pytest.Config) -> ChaosSession:
    """The session's :class:`ChaosSession`, registered by the plugin at configure time."""
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if not isinstance(plugin, ChaosSession):
        raise RuntimeError("no ChaosSession: the streamchaos plugin is not loaded (-p no:streamchaos?)")
    return plugin


@dataclass
class Outcome:
    """What session end did, for the terminal summary to print."""

    compare: GateOutcome | None = None
    compare_error: str | None = None
    saved: Path | None = None
    #: the ``--chaos-report`` file and how many results it holds
    report: tuple[str, int] | None = None
    artifacts: tuple[list[Artifacts], list[Path]] | None = None
    draw: bool = False


class ChaosSession:
    """The plugin's state for one pytest session (see the module docstring)."""

    def __init__(self, settings: _settings.Settings, gates: list[bl.Gate]) -> None:
        self.settings = settings
        self.gates = gates
        #: every result of the session, in the order the tests finished
        self.entries: list[Entry] = []
        #: (nodeid, Versus) of every A/B comparison of the session
        self.comparisons: list[tuple[str, Versus]] = []
        #: nodeid -> what the schedule search of an explored test gave (``exploration.item.Explored``)
        self.explored: dict[str, Any] = {}
        self.outcome = Outcome()

    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> None:
        """Collect the test's results once it is torn down."""
        if call.when != "teardown":
            return
        runs = item.stash.get(RUNS_KEY, [])
        specs = [{**s.to_dict(), "label": s.label} for s in item.stash.get(FAULTS_KEY, [])]
        self.entries.extend((item.nodeid, i, specs, r) for i, r in enumerate(runs))
        self.comparisons.extend((item.nodeid, v) for v in item.stash.get(COMPARISONS_KEY, []))
        explored = item.stash.get(EXPLORED_KEY, None)
        if explored is not None:
            self.explored[item.nodeid] = explored

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Compare with the baseline (failing the session on a gate), save it, write the report and
        the report directory: every file here, none in the terminal summary, which only prints
        (``-p no:terminal`` has none)."""
        config = session.config
        if not self.entries or getattr(config, "workerinput", None) is not None:  # an xdist worker: not here
            return
        st, root = self.settings, Path(str(config.rootpath))
        self._baseline(session, root)
        if st.report:
            out = [{"test": nodeid, "faults": specs, **run.to_dict(), **self._explore_key(nodeid)}
                   for nodeid, _index, specs, run in self.entries]
            write_json(st.report, out)
            self.outcome.report = (st.report, len(out))
        if st.report_dir:
            draw = plots.available()
            self.outcome.artifacts = write_artifacts(root / st.report_dir, self.entries, self.comparisons, draw,
                                                     extra=self._explore_key)
            self.outcome.draw = draw

    def _explore_key(self, nodeid: str) -> dict[str, object]:
        """The ``explore`` key of an explored test's results (docs/report-schema.md), else nothing."""
        explored = self.explored.get(nodeid)
        return {} if explored is None else {"explore": explored.to_dict()}

    def _baseline(self, session: pytest.Session, root: Path) -> None:
        """``--chaos-compare`` / ``--chaos-compare-fail`` (a regression fails the session), ``--chaos-save``."""
        st, gates = self.settings, self.gates
        which = st.compare or (_settings.LATEST if gates else "")
        if not (st.save or which):
            return
        env = envinfo.environment(root, st.java_home)
        storage = bl.Storage(root / st.storage)
        if which:
            try:
                self.outcome.compare = compare_with_baseline(storage, which, self.entries, gates, env)
            except (FileNotFoundError, ValueError) as exc:
                self.outcome.compare_error = str(exc)
                if gates:  # a gate that cannot be checked must not pass silently
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
            else:
                if self.outcome.compare.regressions:
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if st.save:
            name = bl.default_name(env) if st.save == _settings.AUTO else st.save
            self.outcome.saved = storage.save(bl.session_doc(self.entries, env), name)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The table of the session's runs, its A/B comparisons, and what session end wrote."""
        tr = terminalreporter
        if self.explored:
            tr.section("streamchaos: explored fault schedules")
            for explored in self.explored.values():
                for line in explored.summary():
                    tr.write_line(line, red=explored.failed)
        if not self.entries:
            return
        rows = []
        for nodeid, _index, specs, run in self.entries:
            row = run.summary_row()
            row["test"] = nodeid.split("::")[-1]
            labels = planned_labels(run, specs)
            row["faults"] = ", ".join(map(str, labels)) or "-"
            rows.append(row)
        tr.section("streamchaos: chaos runs")
        for line in format_table(rows):
            tr.write_line(line)
        if any(len(r.runs) > 1 for *_, r in self.entries):
            tr.write_line("(repeated runs: median (min-max) over the repeats)")
        if self.outcome.report:
            path, count = self.outcome.report
            tr.write_line(f"streamchaos: wrote {count} run(s) to {path}")
        for nodeid, v in self.comparisons:
            tr.section(f"streamchaos: {nodeid.split('::')[-1]}: {v.labels[1]} versus {v.labels[0]}", sep="-")
            for line in v.describe().splitlines()[1:]:
                tr.write_line(line)
        self._summary_outcome(tr)

    def _summary_outcome(self, tr: pytest.TerminalReporter) -> None:
        """Baseline comparison, gate failures, saved baseline and report files, as session end left them."""
        out = self.outcome
        if out.compare is not None or out.compare_error is not None:
            tr.section("streamchaos: compared with the baseline", sep="-")
            if out.compare_error is not None:
                tr.write_line(f"streamchaos: cannot compare: {out.compare_error}", red=True)
            elif out.compare is not None:
                for line in out.compare.lines:
                    tr.write_line(line, red="REGRESSION" in line)
                regs = out.compare.regressions
                if regs:
                    tr.write_line(f"streamchaos: {len(regs)} regression(s) beyond --chaos-compare-fail; the session "
                                  "fails:", red=True, bold=True)
                    for r in regs:
                        tr.write_line(f"  {r}", red=True)
        if out.saved is not None:
            tr.write_line(f"streamchaos: saved the baseline {out.saved}")
        if out.artifacts is not None:
            arts, pics = out.artifacts
            if not out.draw:
                tr.write_line(plots.MISSING)
            for a in arts:
                files = ", ".join(str(p) for p in [a.json, *a.pictures])
                tr.write_line(f"streamchaos: {a.test}{f' [run {a.index}]' if a.index else ''}: {files}")
            for p in pics:
                tr.write_line(f"streamchaos: comparison picture: {p}")


def planned_labels(result: ChaosRun | RepeatedRun, specs: list[dict[str, Any]]) -> list[str]:
    """The labels of the faults a result's run planned (a repeated run: its worst run's), or, for a run
    without a setup (built from a bare trace), those of the test's fault marks."""
    run = result.worst_run
    setup = run.facts.setup
    return list(setup.planned_faults) if setup is not None else [s.get("label", s["kind"]) for s in specs]


#: JUnit XML properties per run: (name, attribute of the run)
JUNIT: tuple[tuple[str, str], ...] = (
    ("downtime_s", "downtime"),
    ("recovery_time_s", "recovery_time"),
    ("failure_cost_s", "failure_cost"),
    ("lost", "lost"),
    ("duplicates", "duplicates"),
    ("reliability", "reliability"),
    ("guarantee_delivered", "guarantee_delivered"),
    ("latency_p99_s", "latency.p99"),
    ("reliable_throughput", "reliable_throughput"),
)


def junit_properties(result: ChaosRun | RepeatedRun, index: int = 0) -> list[tuple[str, object]]:
    """``chaos.<metric>`` properties of a result (``chaos[1].<metric>`` for a test's second run);
    a repeated run gives medians plus ``repeat`` and each metric's ``..._spread``."""
    prefix = "chaos" if index == 0 else f"chaos[{index}]"
    out = []
    for name, attr in JUNIT:
        v: object = result
        for part in attr.split("."):
            v = getattr(v, part)
        out.append((f"{prefix}.{name}", _prop(v)))
    if isinstance(result, RepeatedRun):
        out.append((f"{prefix}.repeat", len(result.runs)))
        for name, attr in JUNIT:
            if attr != "guarantee_delivered":
                lo, hi = result.spread(attr)
                out.append((f"{prefix}.{name}_spread", f"{_prop(lo)}..{_prop(hi)}"))
    return out


def _prop(v: object) -> object:
    if isinstance(v, NotMeasured):
        return "not measurable"
    if isinstance(v, NotRecovered) or (isinstance(v, float) and math.isinf(v) and v > 0):
        return "not recovered"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else round(v, 4)
    return v


def slug(nodeid: str) -> str:
    """A file name from a test id: ``tests/test_a.py::test_b[x]`` -> ``test_a.test_b-x``."""
    path, _, name = nodeid.rpartition("::")
    stem = Path(path).stem if path else ""
    return re.sub(r"[^\w.-]+", "-", f"{stem}.{name}" if stem else name).strip("-.")


@dataclass
class Artifacts:
    """The files written for one result."""

    test: str
    index: int
    json: Path
    pictures: list[Path] = field(default_factory=list)


def write_artifacts(report_dir: Path, entries: Sequence[Entry], comparisons: Sequence[tuple[str, Versus]],
                    draw: bool, extra: Callable[[str], dict[str, Any]] | None = None,
                    ) -> tuple[list[Artifacts], list[Path]]:
    """Per result ``<slug>[-<index>].json`` and a timeline PNG per run (``-r<k>`` for repeats); per A/B
    comparison one PNG with both runs. ``draw=False`` (no matplotlib): JSON only. ``extra(nodeid)``: keys
    to add to a test's JSON (an explored test's ``explore``)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for nodeid, index, faults, result in entries:
        base = slug(nodeid) + (f"-{index}" if index else "")
        d = {"test": nodeid, "faults": faults, **result.to_dict(), **(extra(nodeid) if extra else {})}
        art = Artifacts(nodeid, index, write_json(report_dir / f"{base}.json", d))
        if draw:
            runs = d.get("runs") or [d]
            for k, run in enumerate(runs):
                name = f"{base}-r{k + 1}.png" if len(runs) > 1 else f"{base}.png"
                title = nodeid + (f"  (run {k + 1} of {len(runs)})" if len(runs) > 1 else "")
                art.pictures.append(plots.timeline_png(run, report_dir / name, title=title))
        out.append(art)
    pics = []
    if draw:
        for n, (nodeid, v) in enumerate(comparisons):
            a, b = (_single(x) for x in (v.a, v.b))
            name = f"{slug(nodeid)}-compare{'-' + str(n) if n else ''}.png"
            pics.append(plots.comparison_png(a, b, report_dir / name, labels=v.labels,
                                             title=f"{nodeid}: {v.labels[1]} versus {v.labels[0]}"))
    return out, pics


def _single(result: Runs) -> plots.RunJson:
    """The run a comparison picture draws: the run itself, or a repeated run's worst."""
    return cast("plots.RunJson", result.worst_run.to_dict())  # its JSON: what docs/report-schema.md says


@dataclass
class GateOutcome:
    """What ``--chaos-compare`` found: the lines to print and the regressions that fail the session."""

    lines: list[str]
    regressions: list[str]


def compare_with_baseline(storage: bl.Storage, which: str, entries: Sequence[Entry], gates: Sequence[bl.Gate],
                          environment: dict[str, Any]) -> GateOutcome:
    """Compare this session's results with the saved baseline ``which``; every gate violation is
    named with test, metric, before, after and threshold."""
    path = storage.find(which)
    doc = storage.load(path)
    current = [(nodeid, index, result.to_dict()) for nodeid, index, _, result in entries]
    comps = bl.compare_session(doc, current, gates)
    env_lines = envinfo.differences(doc.get("environment") or {}, environment)
    lines = bl.render(comps, str(path), env_lines)
    regressions = [
        f"{tc.test}{f' [run {tc.index}]' if tc.index else ''}: {c.metric} {bl._f(c.before)} -> {bl._f(c.after)} "
        f"(gate {next(g for g in gates if g.metric == c.metric)})"
        for tc in comps for c in tc.regressions
    ]
    return GateOutcome(lines, regressions)
