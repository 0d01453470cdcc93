"""What the plugin does with a session's finished runs besides the table: JUnit properties, the
per-run JSON + timeline pictures, and the baseline save / compare / gates.

Each entry is ``(nodeid, index, faults, result)``: ``index`` counts the results of one test (a test
may call ``chaos.run`` more than once), ``result`` is a ``ChaosRun`` or a ``RepeatedRun``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_streamchaos.analysis.metrics import NotRecovered
from pytest_streamchaos.report import baseline as bl
from pytest_streamchaos.report import envinfo, plots

Entry = tuple[str, int, list[dict[str, Any]], Any]

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


def junit_properties(result: Any, index: int = 0) -> list[tuple[str, Any]]:
    """``chaos.<metric>`` properties of a result (``chaos[1].<metric>`` for a test's second run);
    a repeated run gives medians plus ``repeat`` and each metric's ``..._spread``."""
    prefix = "chaos" if index == 0 else f"chaos[{index}]"
    out = []
    for name, attr in JUNIT:
        v: Any = result
        for part in attr.split("."):
            v = getattr(v, part)
        out.append((f"{prefix}.{name}", _prop(v)))
    if hasattr(result, "spread") and hasattr(result, "runs"):
        out.append((f"{prefix}.repeat", len(result.runs)))
        for name, attr in JUNIT:
            if attr != "guarantee_delivered":
                lo, hi = result.spread(attr)
                out.append((f"{prefix}.{name}_spread", f"{_prop(lo)}..{_prop(hi)}"))
    return out


def _prop(v: Any) -> Any:
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


def write_artifacts(report_dir: Path, entries: Sequence[Entry], comparisons: Sequence[tuple[str, Any]],
                    draw: bool) -> tuple[list[Artifacts], list[Path]]:
    """Per result ``<slug>[-<index>].json`` and a timeline PNG per run (``-r<k>`` for repeats); per A/B
    comparison one PNG with both runs. ``draw=False`` (no matplotlib): JSON only."""
    report_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for nodeid, index, faults, result in entries:
        base = slug(nodeid) + (f"-{index}" if index else "")
        d = {"test": nodeid, "faults": faults, **result.to_dict()}
        jpath = report_dir / f"{base}.json"
        jpath.write_text(json.dumps(d, indent=1, default=str))
        art = Artifacts(nodeid, index, jpath)
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


def _single(result: Any) -> dict[str, Any]:
    """The run a comparison picture draws: the run itself, or a repeated run's worst."""
    return (result.worst_run if hasattr(result, "worst_run") else result).to_dict()


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
