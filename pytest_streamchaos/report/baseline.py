"""Saved baselines and regression gates (modelled on pytest-benchmark's save / compare / compare-fail).

A baseline is one JSON file per session under the storage directory, ``NNNN_<name>.json``::

    {"schema_version": 2, "name": ..., "environment": {spark, java, python, cores, commit, ...},
     "tests": [{"test": nodeid, "index": 0, "faults": [...], "result": <ChaosRun.to_dict() or
               RepeatedRun.to_dict()>}, ...]}

``compare`` matches the runs of this session to the baseline's by (test id, index of the run in the
test) and reports each headline metric before -> after. A gate ``METRIC:N%`` / ``METRIC:N`` fails
when the metric got *worse* (higher for times and counts, lower for reliability / throughput) by
more than N percent of the baseline value / N in the metric's unit -- unless the new value lies
within the baseline's own spread over repeated runs: that is noise, and the report says so.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from pytest_streamchaos.analysis import keys
from pytest_streamchaos.analysis.result import SCHEMA_VERSION, ChaosRun
from pytest_streamchaos.events import Kind, Phase, TimelineEvent
from pytest_streamchaos.facts import RunSetup
from pytest_streamchaos.jsonfile import write_json
from pytest_streamchaos.records import OutputRecords, SentRecords, Trace

_FILE = re.compile(r"^(\d{4})_(.+)\.json$")
_SPEC = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*:\s*([0-9]*\.?[0-9]+)\s*(%?)\s*$")


# -- gates -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Gate:
    """``METRIC:N%`` (relative to the baseline value) or ``METRIC:N`` (absolute, the metric's unit)."""

    metric: str
    threshold: float
    relative: bool

    def __str__(self) -> str:
        return f"{self.metric}:{self.threshold:g}{'%' if self.relative else ''}"

    def allowed(self, before: float) -> float:
        """How much worse than ``before`` the metric may get."""
        return abs(before) * self.threshold / 100.0 if self.relative else self.threshold


def parse_gates(text: str) -> list[Gate]:
    """Parse ``downtime:20%,lost:0,latency.p99:0.5``; ValueError names the bad part and the syntax."""
    gates = []
    for part in (p for p in text.split(",") if p.strip()):
        m = _SPEC.match(part)
        if not m:
            raise ValueError(f"{part.strip()!r} is not METRIC:N% or METRIC:N (e.g. downtime:20% or lost:0)")
        gates.append(Gate(m.group(1), float(m.group(2)), m.group(3) == "%"))
    return gates


def check_gates(gates: Sequence[Gate]) -> None:
    """Every gate's METRIC names a number of a run's JSON (judged on a synthetic run's, made here): ValueError
    naming the first that does not, with the did-you-mean -- at session start, not after the runs."""
    if not gates:
        return
    sample = sample_run_json()
    for gate in gates:
        why = keys.metric_refusal(gate.metric, sample)
        if why:
            raise ValueError(f"{gate}: {why}")


def sample_run_json() -> dict[str, object]:
    """The JSON of a run of a made-up trace with one fault (what every run's JSON has the keys of)."""
    return ChaosRun.from_trace(_sample_trace(), guarantee="at-least-once").to_dict()


def _sample_trace(t0: float = 1_700_000_000.0) -> Trace:
    """100 records sent at 10/s, each output 0.2 s later at the next whole second, a worker's fault at 5 s,
    warm-up to 5 s, load to 10 s, drain to 15 s (tests/unit/test_reports_units.py holds it to the tests'
    synthetic trace of the same run)."""
    ids = np.arange(100, dtype=np.int64)
    send = t0 + ids / 10.0
    arrival = t0 + np.ceil(send + 0.2 - t0)
    sent = SentRecords(ids, np.zeros(ids.size, dtype=np.int64), send.copy(), send)
    outputs = OutputRecords(arrival, np.arange(ids.size + 1, dtype=np.int64), ids)
    phases: dict[str, float] = {Phase.WARMUP_END: t0 + 5.0, Phase.LOAD_END: t0 + 10.0, Phase.DRAIN_END: t0 + 15.0}
    return Trace(sent, outputs, timeline=[TimelineEvent(t0 + 5.0, Kind.FAULT_INJECTED, "worker-1")],
                 phases=phases, trigger_seconds=1.0)


# -- storage ---------------------------------------------------------------------------------------
class Storage:
    """The directory of saved baselines; files are numbered in save order."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def files(self) -> list[Path]:
        if not self.path.is_dir():
            return []
        return sorted((p for p in self.path.iterdir() if _FILE.match(p.name)), key=lambda p: p.name)

    def save(self, doc: dict[str, Any], name: str) -> Path:
        """Write ``doc`` as the next numbered file ``NNNN_<name>.json``."""
        self.path.mkdir(parents=True, exist_ok=True)
        existing = self.files()
        n = int(_FILE.match(existing[-1].name).group(1)) + 1 if existing else 1  # type: ignore[union-attr]
        safe = re.sub(r"[^\w.-]+", "-", name).strip("-") or "session"
        return write_json(self.path / f"{n:04d}_{safe}.json", {**doc, "name": safe})

    def find(self, which: str) -> Path:
        """``latest``, a number (``3`` / ``0003``), a name, or a path; FileNotFoundError lists the saved."""
        files = self.files()
        if which == "latest":
            if not files:
                raise FileNotFoundError(f"no baseline saved in {self.path} yet: run with --chaos-save first")
            return files[-1]
        p = Path(which)
        if p.suffix == ".json" and p.is_file():
            return p
        for f in reversed(files):
            num, name = _FILE.match(f.name).groups()  # type: ignore[union-attr]
            if which in (num, name, f.name) or (which.isdigit() and int(which) == int(num)):
                return f
        saved = ", ".join(f.name for f in files) or "none"
        raise FileNotFoundError(f"no baseline {which!r} in {self.path} (saved: {saved})")

    @staticmethod
    def load(path: Path) -> dict[str, Any]:
        return json.loads(Path(path).read_text())


class Saved(Protocol):
    """A run or repeated runs as a baseline saves them: their JSON."""

    def to_dict(self) -> Mapping[str, object]: ...


def session_doc(results: Iterable[tuple[str, int, list[dict[str, Any]], Saved]],
                environment: Mapping[str, Any]) -> dict[str, Any]:
    """The document ``--chaos-save`` writes: the environment and every (test, index, faults, result)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "environment": dict(environment),
        "tests": [{"test": t, "index": i, "faults": faults, "result": r.to_dict()} for t, i, faults, r in results],
    }


def default_name(environment: Mapping[str, Any]) -> str:
    """``<commit>_<time>`` (or just the time outside git)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    commit = (environment.get("commit") or {}).get("id")
    return f"{commit[:8]}_{stamp}" if commit else stamp


# -- comparison ------------------------------------------------------------------------------------
def spread_of(result: Mapping[str, Any], metric: str) -> tuple[float, float]:
    """(min, max) of ``metric`` over a repeated result's runs; (v, v) for a single run."""
    runs = result.get("runs")
    if runs:
        vals = [v for v in (keys.from_dict(r, metric) for r in runs) if not math.isnan(v)]
        if vals:
            return min(vals), max(vals)
    v = keys.from_dict(result, metric)
    return v, v


@dataclass
class MetricChange:
    """One metric of one run: before -> after, and what the gates made of it."""

    metric: str
    before: float
    after: float
    before_spread: tuple[float, float]
    status: str = ""  #: "" | "better" | "worse" | "regression" | "noise"
    note: str = ""

    @property
    def change(self) -> float:
        return self.after - self.before


@dataclass
class TestComparison:
    """Every compared metric of one run of one test (``index``: its position among the test's runs)."""

    test: str
    index: int
    changes: list[MetricChange] = field(default_factory=list)
    explain: list[str] = field(default_factory=list)
    missing: bool = False

    @property
    def regressions(self) -> list[MetricChange]:
        return [c for c in self.changes if c.status == "regression"]


def _judge(c: MetricChange, gate: Gate | None, repeated: bool) -> None:
    worse_by = keys.worse(c.metric, c.before, c.after)
    if math.isnan(worse_by) or worse_by == 0:
        return
    c.status = "worse" if worse_by > 0 else "better"
    if gate is None or worse_by <= 0:
        return
    allowed = gate.allowed(c.before)
    if not worse_by > allowed:
        c.note = f"within gate {gate}"
        return
    lo, hi = c.before_spread
    if repeated and lo <= c.after <= hi:
        c.status = "noise"
        spread = f"{_f(lo)}..{_f(hi)}"
        c.note = f"within the baseline's own spread {spread}: not a regression (gate {gate})"
        return
    c.status = "regression"
    c.note = f"REGRESSION: gate {gate} allows {_f(allowed)} worse"


def compare_result(test: str, index: int, before: Mapping[str, Any], after: Mapping[str, Any],
                   gates: Sequence[Gate] = ()) -> TestComparison:
    """Compare one run's JSON with its baseline's: the headline metrics and every gated one."""
    by_metric = {g.metric: g for g in gates}
    metrics = list(keys.HEADLINE) + [g.metric for g in gates if g.metric not in keys.HEADLINE]
    tc = TestComparison(test, index)
    repeated = bool(before.get("runs"))
    for m in metrics:
        try:
            b, a = keys.from_dict(before, m), keys.from_dict(after, m)
        except KeyError as exc:
            if m in by_metric:  # a gate on a metric the JSON lacks is the user's typo: say so
                raise ValueError(f"--chaos-compare-fail {by_metric[m]}: {exc.args[0]}") from None
            continue
        c = MetricChange(m, b, a, spread_of(before, m))
        _judge(c, by_metric.get(m), repeated)
        tc.changes.append(c)
    tc.explain = explain(before, after)
    return tc


def explain(before: Mapping[str, Any], after: Mapping[str, Any], limit: int = 8) -> list[str]:
    """What differs between the two runs' effective settings (Spark conf, cluster conf, run spec, seed)."""
    sb = RunSetup.from_meta(_one(before).get("meta") or {})
    sa = RunSetup.from_meta(_one(after).get("meta") or {})
    lines = sb.differences(sa)
    return lines[:limit] + ([f"... and {len(lines) - limit} more"] if len(lines) > limit else [])


def _one(result: Mapping[str, Any]) -> Mapping[str, Any]:
    runs = result.get("runs")
    return runs[0] if runs else result


def compare_session(baseline: Mapping[str, Any], current: Sequence[tuple[str, int, Mapping[str, Any]]],
                    gates: Sequence[Gate] = ()) -> list[TestComparison]:
    """Every run of this session (test, index, result JSON) against the baseline document."""
    saved = {(t["test"], t.get("index", 0)): t["result"] for t in baseline.get("tests", [])}
    out = []
    for test, index, result in current:
        before = saved.get((test, index))
        if before is None:
            out.append(TestComparison(test, index, missing=True))
        else:
            out.append(compare_result(test, index, before, result, gates))
    return out


def render(comparisons: Sequence[TestComparison], baseline_file: str, env_lines: Sequence[str]) -> list[str]:
    """The terminal lines: per test, each metric ``before -> after (change)`` and its verdict."""
    lines = [f"baseline: {baseline_file}"]
    lines += [f"  environment changed: {e}" for e in env_lines]
    for tc in comparisons:
        name = tc.test + (f" [run {tc.index}]" if tc.index else "")
        if tc.missing:
            lines.append(f"{name}: not in the baseline")
            continue
        lines.append(f"{name}:")
        width = max((len(c.metric) for c in tc.changes), default=0)
        for c in tc.changes:
            rel = f" ({c.change / abs(c.before):+.0%})" if c.before and math.isfinite(c.before) \
                and math.isfinite(c.change) and c.change else ""
            before, after = _f(c.before), _f(c.after)
            text = f"  {c.metric:<{width}}  {before:>9} -> {after:<9} {keys.fmt_signed(c.change)}{rel}"
            tag = {"regression": "", "noise": "", "worse": "  worse", "better": "  better"}.get(c.status, "")
            lines.append((text + tag + (f"  {c.note}" if c.note else "")).rstrip())
        lines += [f"  setting changed: {e}" for e in tc.explain]
    return lines


def _f(x: float) -> str:
    return keys.fmt(x, "not-recov")  # short: a table column
