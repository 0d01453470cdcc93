"""Faults whose recoveries overlap, measured as one (docs/metrics.md#overlapping-faults-one-recovery): a fault
struck by the next one before it recovered has no recovery of its own (:func:`~.run_metrics.cut_off_by`), but
the faults of such a chain have one together -- from the first one's injection until the output was back in
band after the last of them. Pure: measured faults in, groups and numbers out."""

from __future__ import annotations

from .run_metrics import FaultMetrics, struck_at_horizon
from .sentinels import NotRecovered, RecoveryTime


def overlaps(fault: FaultMetrics, later: FaultMetrics) -> bool:
    """Whether ``later`` (the next fault injected after ``fault``) struck before ``fault`` recovered: ``fault``
    was recovered only after ``later``'s injection (one occurrence: faults injected less than a bucket apart are
    measured together, :func:`~.per_fault.occurrence_window`), or it did not recover by its horizon and that
    horizon reached ``later``'s injection (``later`` cut it off). A fault not measured (None) overlaps nothing:
    nothing says where its effect ended, so its group stays not measurable."""
    if fault.recovered_at is not None:
        return later.t < fault.recovered_at
    return struck_at_horizon(fault, later)


def recovery_groups(faults: list[FaultMetrics]) -> list[list[FaultMetrics]]:
    """``faults`` in injection order, cut into groups whose recoveries overlap: each fault joins the group of
    the one before it when it struck before that one recovered (:func:`overlaps`), a chain of cut-offs; a fault
    on its own is a group of one."""
    groups: list[list[FaultMetrics]] = []
    for f in sorted(faults, key=lambda x: x.t):
        if groups and overlaps(groups[-1][-1], f):
            groups[-1].append(f)
        else:
            groups.append([f])
    return groups


def group_recovery(group: list[FaultMetrics]) -> RecoveryTime | None:
    """The recovery time of a group (:func:`recovery_groups`): from its first fault's injection until its last
    fault's recovery point (``recovered_at``). The last one's verdict is the group's: :data:`NOT_RECOVERED` when
    it did not recover -- a cut-off is never green on its own --, None when it was not measured. A group of one
    is its fault's own recovery time."""
    last = group[-1]
    rec = last.recovery_time
    if len(group) == 1 or rec is None or isinstance(rec, NotRecovered) or last.recovered_at is None:
        return rec
    return last.recovered_at - group[0].t


def group_recoveries(faults: list[FaultMetrics], cut: set[str] | None = None) -> list[RecoveryTime | None]:
    """The recovery time of each group of ``faults`` (:func:`group_recovery`); ``cut``: labels of faults cut off
    by a fault that is not among ``faults`` (a window's fault struck by another window's): a group ending in one
    is not measurable here, the rest of its chain being elsewhere."""
    return [None if cut and g[-1].label in cut else group_recovery(g) for g in recovery_groups(faults)]


__all__ = ["group_recoveries", "group_recovery", "overlaps", "recovery_groups"]
