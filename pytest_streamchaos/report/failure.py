"""What a failed chaos test shows beside its assertion: the runs it made, explained.

A chaos test fails on a plain ``assert run.lost == 0``; pytest then prints the assertion and the values
it compared, but not what happened to the records. :func:`failure_section` is the text of the report
section the plugin adds to a failed test's report (``chaos run``, shown with the captured output, also
under ``pytest -q``): per run a short account first -- the verdict, each fault and whether the job
recovered, each exit of the job's driver with the first line of its error, the restarts -- and, where
records were lost after the driver stopped and nothing started it again, one line saying so and naming
``supervise=True``; then the run's full report (``describe()``: the numbers and the timeline).

It reads a run through its public API only (``to_dict()``, the documented JSON of
``docs/report-schema.md``, the typed ``job_log`` and ``arguments``, and ``describe()``), and the driver's
log for an exit the timeline does not explain.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_streamchaos.analysis.repeat import RepeatedRun
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.events import Kind
from pytest_streamchaos.stack.driver.job import CRASHED, last_exception, with_worker_error

#: the report section's title
TITLE = "chaos run"
#: how much of the end of a driver's log is read for its error (a long run's log is large)
LOG_TAIL_BYTES = 256_000


def failure_section(results: Sequence[ChaosRun | RepeatedRun]) -> str:
    """The section for a failed test's runs (``ChaosRun`` or ``RepeatedRun``, as the ``chaos`` fixture
    returned them); ``""`` when there are none."""
    parts = []
    for i, result in enumerate(results):
        runs = list(result.runs)
        # a repeated scenario: the run that explains a violated bound, the others in one line each
        run = result.worst_run if len(runs) > 1 else runs[0]
        head = f"run {i + 1} of {len(results)}" if len(results) > 1 else "run"
        if len(runs) > 1:
            index = next(k for k, r in enumerate(runs) if r is run)
            head += f" (repeat={len(runs)}: the worst run, {index + 1}; the others: " + "; ".join(
                repr(r) for r in runs if r is not run) + ")"
        parts.append("\n".join([f"{head}: {run!r}", *explain(run), "", run.describe()]))
    return "\n\n".join(parts)


def explain(run: ChaosRun) -> list[str]:
    """The short account of one run (see the module docstring), one line per point."""
    d = run.to_dict()
    events = sorted(d.get("timeline") or [], key=lambda e: e["t"])
    t0 = (d.get("metrics") or {}).get("t0") or (events[0]["t"] if events else 0.0)
    lines = [_verdict(d)]
    lines += _faults(d, t0)
    exits = _exits(events, run.job_log, t0)
    lines += [line for line, _ in exits] or ["driver: ran to the end of the run (no exit of its own)"]
    restarts = sum(1 for e in events if e["kind"] == Kind.DRIVER_LAUNCHED) - 1
    if restarts > 0:
        lines.append(f"restarts: the driver was started {restarts} more time{'s' if restarts != 1 else ''} "
                     "(from its checkpoint)")
    stranded = _stranded(events, d, t0, supervised=bool(run.arguments.get("supervise")))
    if stranded:
        lines.append(stranded)
    return lines


def _verdict(d: dict[str, Any]) -> str:
    if d.get("lost") is None:
        return (f"verdict: sent {d.get('sent')}, no per-record verdict (the output is not readable); "
                f"{_recovery(d)}")
    return (f"verdict: sent {d.get('sent')}, lost {d['lost']}, duplicates {d.get('duplicates')}, incorrect "
            f"{d.get('incorrect')}; guarantee declared {d.get('guarantee')}, delivered "
            f"{d.get('guarantee_delivered')}; {_recovery(d)}")


def _recovery(d: dict[str, Any]) -> str:
    faults = (d.get("metrics") or {}).get("faults") or []
    if not faults:
        return "no fault"
    if d.get("recovered"):
        return f"recovered (recovery time {_s(d.get('recovery_time'))})"
    return "NOT recovered"


def _faults(d: dict[str, Any], t0: float) -> list[str]:
    out = []
    for i, f in enumerate((d.get("metrics") or {}).get("faults") or []):
        rec = f.get("recovered")
        how = ("recovery not measured" if rec is None else f"recovered in {_s(f.get('recovery_time'))}" if rec
               else "not recovered" + (f" by +{f['horizon'] - t0:.1f}s" if f.get("horizon") else ""))
        out.append(f"fault {i}: {f.get('kind')} {f.get('target')} at +{f.get('t', t0) - t0:.1f}s: "
                   f"{f.get('verdict')}, {how}")
    return out


def _exits(events: list[dict[str, Any]], log: str, t0: float) -> list[tuple[str, float]]:
    """One line per exit of the driver of its own (``driver_exited``), with the first line of its error:
    the query's exception from the event log, else the last Python exception in the driver's ``log``."""
    out = []
    log_error = None
    for e in events:
        if e["kind"] != Kind.DRIVER_EXITED:
            continue
        killed = any(x["kind"] == Kind.DRIVER_KILLED and e["t"] - 5.0 <= x["t"] <= e["t"] for x in events)
        error = "killed by a fault (driver_killed)" if killed else _query_error(events, e["t"])
        if error is None:
            log_error = log_error if log_error is not None else _log_error(log)
            error = log_error or "no error in its event log or its log"
        elif CRASHED in error:  # the query says only that a Python worker crashed: its own error is in the log
            error = with_worker_error(error, _log_tail(log) or "")
        later = any(x["kind"] == Kind.DRIVER_LAUNCHED and x["t"] > e["t"] for x in events)
        code = (e.get("detail") or {}).get("code")
        out.append((f"driver: exited at +{e['t'] - t0:.1f}s (exit code {code}): {error}; "
                    + ("started again" if later else "not started again"), e["t"]))
    return out


def _query_error(events: list[dict[str, Any]], before: float) -> str | None:
    """The first line of the exception of the last query that terminated before ``before``."""
    errors = [(e.get("detail") or {}).get("exception") for e in events
              if e["kind"] == Kind.QUERY_TERMINATED and e["t"] <= before + 1.0]
    errors = [x for x in errors if x]
    if not errors:
        return None
    return next((ln.strip() for ln in str(errors[-1]).splitlines() if ln.strip()), None)


def _log_tail(path: str | None) -> str | None:
    """The end of the driver's log (None: no log, or it cannot be read)."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            size = Path(path).stat().st_size
            f.seek(max(0, size - LOG_TAIL_BYTES))
            return f.read().decode(errors="replace")
    except OSError:
        return None


def _log_error(path: str | None) -> str | None:
    text = _log_tail(path)
    return None if text is None else last_exception(text)


def _stranded(events: list[dict[str, Any]], d: dict[str, Any], t0: float, supervised: bool) -> str | None:
    """The line for records lost because the driver stopped for good: a run that lost records, whose
    driver's last exit was not followed by a new start, and that was not supervised."""
    if not d.get("lost"):
        return None
    exits = [e for e in events if e["kind"] == Kind.DRIVER_EXITED]
    if not exits or any(e["kind"] == Kind.DRIVER_LAUNCHED and e["t"] > exits[-1]["t"] for e in events):
        return None
    if supervised:
        return (f"lost: {d['lost']} records; the driver stopped at +{exits[-1]['t'] - t0:.1f}s and was not started "
                "again although supervise=True (it exited too often: see the restarts above)")
    return (f"lost: {d['lost']} records because the job stopped at +{exits[-1]['t'] - t0:.1f}s and nothing "
            "restarted it; in production a scheduler restarts it (spark-submit --supervise, YARN attempts, "
            "a Kubernetes restart policy): chaos.run(..., setup=JobSetup(supervise=True)) does that here, "
            "from its checkpoint")


def _s(v: object) -> str:
    return f"{v:.1f}s" if isinstance(v, (int, float)) else "not measured"
