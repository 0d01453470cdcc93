"""Timeline pictures of runs (PNG): throughput in and out, latency p50 / p99 per second, backlog,
fault windows shaded and labelled, recovery marked. Optional: needs matplotlib (``pip install
'pytest-streamchaos[plots]'``); :data:`MISSING` is the one-line message when it is not installed.

Everything is drawn from a run's JSON (``ChaosRun.to_dict()``), so a saved baseline can be drawn too.
Uses matplotlib's object API (``Figure`` + Agg canvas), never ``pyplot``: no global state, no GUI
backend, safe inside a test session.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from pytest_streamchaos.events import Kind

if TYPE_CHECKING:  # matplotlib is optional (the plots extra): imported where a picture is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MISSING = "streamchaos: timeline pictures need matplotlib: pip install 'pytest-streamchaos[plots]'"

_FAULT = "#d62728"
_RECOVERED = "#2ca02c"
_PHASE = "#e8e8e8"
_COLOURS = ("#1f77b4", "#ff7f0e")


# The part of a run's JSON (docs/report-schema.md) the pictures read; a run's own JSON holds more.


class LineDetail(TypedDict, total=False):
    """A timeline line's ``detail``, as far as a fault window's label reads it."""

    label: str
    fault: str


class TimelineLine(TypedDict, total=False):
    """One line of ``timeline``."""

    t: float
    kind: str
    target: str | None
    detail: LineDetail | None


class FaultMetrics(TypedDict, total=False):
    """One of ``metrics.faults``, as a recovery mark reads it."""

    recovered_at: float | None
    recovery_time: float | None


class Params(TypedDict):
    """``metrics.params``: the bucket width of the series."""

    bucket_seconds: float


class Metrics(TypedDict, total=False):
    """``metrics``: the run's phases (absolute times), its series per bucket, its faults, its latency."""

    t0: float
    load_start: float
    load_end: float
    params: Params
    series: dict[str, list[float | None]]
    faults: list[FaultMetrics]
    latency: dict[str, float | None]


class Validation(TypedDict):
    """``validation``'s counts (a schema 1 run has them only here)."""

    lost: int
    duplicates: int


class RunJson(TypedDict, total=False):
    """A run's JSON (``ChaosRun.to_dict()``, a saved baseline's run), as the pictures read it."""

    metrics: Metrics
    timeline: list[TimelineLine]
    unavailable: dict[str, str]
    downtime: float | None
    failure_cost: float | None
    recovery_time: float | None
    recovered: bool | None
    latency: dict[str, float | None] | None
    validation: Validation
    lost: int
    duplicates: int


def available() -> bool:
    """True when matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _series(run: RunJson, key: str) -> list[float]:
    return [math.nan if v is None else float(v) for v in run["metrics"]["series"][key]]


@dataclass
class _Window:
    """A fault's window while it is paired: open until a heal sets ``healed``."""

    injected: float
    healed: float | None
    label: str
    target: str | None


def fault_windows(run: RunJson) -> list[tuple[float, float | None, str]]:
    """(injected, healed or None, label) per fault, absolute times; a heal is paired with the
    earliest open injection of the same fault label (else the same target)."""
    open_: list[_Window] = []
    out: list[_Window] = []
    for e in sorted(run.get("timeline", []), key=lambda e: e["t"]):
        d = e.get("detail") or {}
        if e["kind"] == Kind.FAULT_INJECTED:
            label = d.get("label") or f"{d.get('fault', 'fault')} {e.get('target', '')}".strip()
            w = _Window(e["t"], None, label, e.get("target"))
            open_.append(w)
            out.append(w)
        elif e["kind"] == Kind.FAULT_HEALED:
            for w in open_:
                if (d.get("label") and w.label == d["label"]) or w.target == e.get("target"):
                    w.healed = e["t"]
                    open_.remove(w)
                    break
    return [(w.injected, w.healed, w.label) for w in out]


def _marks(run: RunJson) -> list[tuple[float, str]]:
    """(time, kind) of recovered / not_recovered events."""
    return [(e["t"], e["kind"]) for e in run.get("timeline", []) if e["kind"] in (Kind.RECOVERED, Kind.NOT_RECOVERED)]


def _seconds(run: RunJson, name: str, value: float | None) -> str:
    """A headline duration: ``1.2s``, or ``not measurable`` (null, with the reason in ``unavailable``)."""
    return "not measurable" if value is None and name in (run.get("unavailable") or {}) else f"{value or 0:.1f}s"


def _headline(run: RunJson) -> str:
    rec = "not recovered" if run.get("recovery_time") is None and run.get("recovered") is False else _seconds(
        run, "recovery_time", run.get("recovery_time"))
    lat = run.get("latency") or run["metrics"]["latency"]
    p99 = lat.get("p99")
    return (f"downtime {_seconds(run, 'downtime', run.get('downtime'))}   recovery {rec}   failure cost "
            f"{_seconds(run, 'failure_cost', run.get('failure_cost'))}   lost "
            f"{run.get('lost', run['validation']['lost'])}   "
            f"duplicates {run.get('duplicates', run['validation']['duplicates'])}   p99 "
            + ("n/a" if p99 is None else f"{p99:.2f}s"))


def _figure(rows: int = 3) -> tuple[Figure, list[Axes]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 8.5), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 1, sharex=True, height_ratios=[1.2, 1.2, 0.8])
    return fig, list(axes)


def _shade_run(axes: Sequence[Axes], run: RunJson, origin: float, colour: str = _FAULT,
               tag: str = "") -> None:
    """Fault windows (shaded, labelled at the top), recovery (dashed line, labelled), on every axis."""
    m = run["metrics"]
    top = axes[0]
    for t_in, t_out, label in fault_windows(run):
        x0 = t_in - origin
        x1 = (t_out - origin) if t_out is not None else None
        for ax in axes:
            if x1 is not None and x1 > x0:
                ax.axvspan(x0, x1, color=colour, alpha=0.13, lw=0)
            ax.axvline(x0, color=colour, lw=1.2)
        top.annotate(f"{tag}{label}", xy=(x0, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -3),
                     textcoords="offset points", va="top", ha="left", fontsize=8, color=colour,
                     rotation=0, bbox={"fc": "white", "ec": "none", "alpha": 0.7, "pad": 1})
    for t, kind in _marks(run):
        x = t - origin
        ok = kind == Kind.RECOVERED
        c = _RECOVERED if ok else _FAULT
        for ax in axes:
            ax.axvline(x, color=c, lw=1.2, ls="--")
        faults = [f for f in m.get("faults", []) if f.get("recovered_at") == t]
        text = "recovered" if ok else "NOT recovered"
        if ok and faults and faults[0].get("recovery_time") is not None:
            text += f" ({faults[0]['recovery_time']:.1f}s)"
        axes[1].annotate(f"{tag}{text}", xy=(x, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -3),
                         textcoords="offset points", va="top", fontsize=8, color=c,
                         bbox={"fc": "white", "ec": "none", "alpha": 0.7, "pad": 1})


def _phases(axes: Sequence[Axes], run: RunJson, origin: float) -> None:
    """Warm-up and drain in grey: not part of the measured load."""
    m = run["metrics"]
    t = _series(run, "t")
    if not t:
        return
    end = t[-1] + m["params"]["bucket_seconds"]
    for ax in axes:
        ax.axvspan(m["t0"] - origin, m["load_start"] - origin, color=_PHASE, lw=0, zorder=0)
        ax.axvspan(m["load_end"] - origin, end - origin, color=_PHASE, lw=0, zorder=0)
    axes[2].annotate("warm-up", xy=((m["load_start"] - origin), 0.02), xycoords=("data", "axes fraction"),
                     xytext=(-3, 2), textcoords="offset points", ha="right", fontsize=8, color="#777")
    axes[2].annotate("drain", xy=((m["load_end"] - origin), 0.02), xycoords=("data", "axes fraction"),
                     xytext=(3, 2), textcoords="offset points", ha="left", fontsize=8, color="#777")


def _plot_series(axes: Sequence[Axes], run: RunJson, origin: float, colour: str | None = None,
                 label: str = "", lw: float = 1.4) -> None:
    t = [x - origin for x in _series(run, "t")]
    pre = f"{label} " if label else ""
    ax_tp, ax_lat, ax_bl = axes
    # steps: each value is the rate over its bucket [t, t + B)
    ax_tp.step(t, _series(run, "input"), where="post", color=colour or "#7f7f7f", lw=1.0,
               ls="--" if colour else "-", label=f"{pre}input")
    ax_tp.step(t, _series(run, "output_ids"), where="post", color=colour or _COLOURS[0], lw=lw,
               label=f"{pre}output")
    # latency of the outputs that arrived in the bucket: a step too; no output -> NaN -> a gap
    ax_lat.step(t, _series(run, "latency_p50"), where="post", color=colour or _COLOURS[0], lw=1.0,
                ls=":" if colour else "-", label=f"{pre}p50")
    ax_lat.step(t, _series(run, "latency_p99"), where="post", color=colour or _COLOURS[1], lw=lw,
                label=f"{pre}p99")
    ax_bl.fill_between(t, _series(run, "backlog"), step="post", color=colour or "#9467bd",
                       alpha=0.25 if colour else 0.4, lw=0)
    ax_bl.step(t, _series(run, "backlog"), where="post", color=colour or "#9467bd", lw=1.0,
               label=f"{pre}backlog")


def _decorate(axes: Sequence[Axes], xlabel: str) -> None:
    ax_tp, ax_lat, ax_bl = axes
    ax_tp.set_ylabel("records / s")
    ax_lat.set_ylabel("latency (s)")
    ax_bl.set_ylabel("backlog (records)")
    ax_bl.set_xlabel(xlabel)
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        # outside the plot: inside, it hid the fault and recovery labels
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)


def timeline_png(run: RunJson, path: str | Path, title: str = "") -> Path:
    """Draw one run (its JSON) to ``path``; x = seconds from the run's start, as its timeline lines."""
    fig, axes = _figure()
    origin = run["metrics"]["t0"]
    _phases(axes, run, origin)
    _plot_series(axes, run, origin)
    _shade_run(axes, run, origin)
    _decorate(axes, "seconds from the run's start (grey: warm-up and drain, not measured)")
    fig.suptitle(f"{title}\n{_headline(run)}" if title else _headline(run), fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def comparison_png(a: RunJson, b: RunJson, path: str | Path,
                   labels: tuple[str, str] = ("A", "B"), title: str = "") -> Path:
    """Both runs in one picture, aligned on their steady state (t = 0: the load phase starts)."""
    fig, axes = _figure()
    # A wider underneath, so that where the runs agree both stay visible
    for run, colour, label, lw in ((a, _COLOURS[0], labels[0], 3.0), (b, _COLOURS[1], labels[1], 1.3)):
        origin = run["metrics"]["load_start"]
        _plot_series(axes, run, origin, colour, label, lw)
        _shade_run(axes, run, origin, colour=_FAULT, tag=f"{label}: ")
    _decorate(axes, "seconds from steady state (start of the load phase)")
    head = f"{labels[0]}: {_headline(a)}\n{labels[1]}: {_headline(b)}"
    fig.suptitle(f"{title}\n{head}" if title else head, fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
