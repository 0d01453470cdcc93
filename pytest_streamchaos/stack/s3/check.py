"""The object store check (the ``s3`` storage entry's ``checks``: every run is judged with it): what the job's S3A did
about a fault of the store it keeps its checkpoint or tables on -- retried, failed a batch's tasks, failed the query
-- and that each such fault had the effect it claims.

A fault of the store says so in its ``fault_injected`` detail (``store``); the check reads, from the run's
timeline only (pure):

- what the store's proxy refused (``s3_requests_refused``: by operation, the requests it answered with an
  error, and how many of those the job sent again -- S3A's, or its SDK's, retries);
- when a killed store answered again (``s3_store_ready``);
- what the job's driver log said of S3 while the fault acted (``s3a_logged``: its S3A / AWS SDK lines, the
  retries among them, the first);
- what Spark recorded meanwhile in the job's event log: tasks that failed (``task_failed``, with S3A's
  exception), the query terminated with an exception (``query_terminated``), the driver exiting.

It holds when every such fault had its effect (requests refused, the store down and back); a fault without
effect (no request of its operations came) makes the run's verdict about it meaningless, so it is violated.
Whether records were lost is the guarantee checks' to say.
"""

from __future__ import annotations

from typing import Any

from pytest_streamchaos.analysis.checker import CheckResult
from pytest_streamchaos.events import Exited, Failure, Kind
from pytest_streamchaos.history import FaultRecord, History
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.stack.s3 import S3Kind

#: what Spark records after a fault that still counts as the job's reaction to it (a failed task's retries, the
#: query's failure once S3A gave up)
AFTER_S = 60.0


def _in(events: list[TimelineEvent], kind: Kind, start: float, end: float) -> list[TimelineEvent]:
    return [e for e in events if e.kind == kind and start <= e.t <= end]


def _refused_line(label: str, e: TimelineEvent) -> str:
    d = e.detail
    matched, refused, retried = (sum((d.get(k) or {}).values()) for k in ("matched", "refused", "retried"))
    share = f" ({100 * refused / matched:.0f}%)" if matched else ""
    delay = d.get("retry_delay_median_s")
    later = f", a median {delay:g}s later" if delay is not None and retried else ""
    return (f"{label}: the store's proxy answered {d.get('status')} {d.get('code')} to {refused} of {matched} "
            f"{'/'.join(d.get('ops') or [])} requests{share}; S3A sent {retried} of them again (retried{later})")


def reaction(fault: FaultRecord, events: list[TimelineEvent], end: float) -> dict[str, object]:
    """What the job did between ``fault``'s injection and ``end``: its tasks that failed (and the first
    exception), whether the query failed (Spark's first line) or the driver exited."""
    start = fault.injected_at or 0.0
    tasks = _in(events, Kind.TASK_FAILED, start, end)
    failed = [e for e in _in(events, Kind.QUERY_TERMINATED, start, end) if Failure.of(e).exception]
    exits = [e for e in _in(events, Kind.DRIVER_EXITED, start, end) if Exited.of(e).failed]
    first_task = Failure.of(tasks[0]).exception if tasks else None
    message = str(tasks[0].detail.get("message") or "") if tasks else ""
    query = (Failure.of(failed[0]).exception or "").strip().splitlines()[0][:300] if failed else None
    return {"task_failures": len(tasks), "task_exception": first_task, "task_message": message[:200],
            "query_failed": bool(failed or exits), "query_exception": query}


def reaction_line(label: str, r: dict[str, Any]) -> str:
    tasks = ("no task failed" if not r["task_failures"] else
             f"{r['task_failures']} task(s) failed (first: {r['task_exception']}: {r['task_message']})")
    query = (f"the query failed: {r['query_exception']}" if r["query_exception"] else
             "the query failed (its driver exited)" if r["query_failed"] else "the query kept running")
    return f"{label}: {tasks}; {query}"


def _logged_line(label: str, events: list[TimelineEvent]) -> list[str]:
    """What the driver's log said of S3 while the fault acted (none: the fault recorded nothing)."""
    logged = [e.detail for e in events if e.kind == S3Kind.S3A_LOGGED and e.target == label]
    if not logged:
        return []
    d = logged[-1]
    if not d.get("lines"):
        return [f"{label}: the driver's log said nothing of S3 meanwhile"]
    return [f"{label}: the driver's log: {d['lines']} line(s) about S3, {d.get('retries', 0)} naming a retry "
            f"(first: {d.get('first')})"]


class ObjectStoreCheck:
    """What S3A did about each fault of the object store (see the module docstring)."""

    name = "s3"

    def check(self, history: History) -> CheckResult:
        faults = [f for f in history.injected() if "store" in f.detail]
        if not faults:
            return CheckResult(self.name, True, [], {"faults": 0})
        events = list(history.trace.timeline)
        run_end = max((e.t for e in events), default=0.0)
        lines: list[str] = []
        numbers: dict[str, Any] = {}
        ok = True
        for f in faults:
            end = min(run_end, (f.healed_at or run_end) + AFTER_S)
            own, problem = self._own_effect(f, events)
            r = reaction(f, events, end)
            lines += [*own, *_logged_line(f.label, events), reaction_line(f.label, r)]
            numbers[f.label] = r
            if problem:
                ok = False
                lines.append(f"{f.label}: {problem}")
        return CheckResult(self.name, ok, lines, numbers)

    @staticmethod
    def _own_effect(f: FaultRecord, events: list[TimelineEvent]) -> tuple[list[str], str | None]:
        """The fault's own account (what the proxy refused, when the store was back) and, when it had no
        effect, why."""
        refused = [e for e in events if e.kind == S3Kind.S3_REQUESTS_REFUSED and e.target == f.label]
        if refused:
            total = sum((refused[-1].detail.get("refused") or {}).values())
            why = None if total else "no request was refused: no request of its operations came while it acted"
            return [_refused_line(f.label, refused[-1])], why
        if f.detail.get("store") == "killed":
            back = [e for e in events if e.kind == S3Kind.S3_STORE_READY and e.t >= (f.healed_at or f.injected_at or 0)]
            if not back:
                return [], "the store never answered again after its restart"
            down = back[0].t - (f.injected_at or back[0].t)
            return [f"{f.label}: the store was down {down:.1f}s (killed, started again, answering)"], None
        return [], None
