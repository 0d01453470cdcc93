"""The damage check: what the job did about a fault that destroyed its input or damaged its checkpoint, or
changed its input's partitions.

A fault says what it did in its ``fault_injected`` event, in plain data (never by its name):

- ``destroyed``: input records it deleted (``{partition: [start, end)}`` of ``topic``, ``end`` None: up to
  the topic's end; ``destroyed_at``: when), e.g. a topic deleted and recreated, records deleted before the
  job read them. The records the job had not read by then are the **gap**: no job can output them.
- ``damage``: a file of the checkpoint it damaged (``file``; ``batch``: the batch it was the newest of;
  ``replays``: the batch the damage makes run again, a dropped commit's). Spark reads it when the restarted
  driver starts its query.
- ``added``: partitions it added to ``topic``: whether the job read their records, and from which offset.

For each, the job's **reaction**: it failed loudly (the query terminated with an error, or the driver exited
with one: Spark's own first line named), recovered (it ran batches again, with nothing lost beyond the gap
and nothing incorrect: the batch it replayed named), or went on while losing records or giving wrong ones.
The check holds when the job failed loudly or recovered correctly; going on silently with wrong output
violates it. The declared guarantee is judged as always by the guarantee checks: a loud failure still
loses what came after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_streamchaos.events import Exited, Failure, Kind
from pytest_streamchaos.history import FaultRecord, History
from pytest_streamchaos.records import TimelineEvent

from ..checker import CheckResult
from ..guarantee import GuaranteeReport
from .guarantee import _NO_VERDICT_SHORT, Validation

#: the fault detail keys this check judges
JUDGED = ("destroyed", "damage", "added")


@dataclass(frozen=True)
class Reaction:
    """What the job did after a fault: ``failed`` (loudly: ``error``, at ``t``), ``recovered`` or ``went_on``
    (it ran batches again: ``batches``, the first ``first_batch``)."""

    kind: str
    error: str | None = None
    t: float | None = None
    batches: int = 0
    first_batch: int | None = None


@dataclass
class DamageResult(CheckResult):
    """The damage check's result: one line per judged fault (in the run's report beside its recovery), and the
    job's reaction to each, by the fault's label."""

    reactions: dict[str, str] = field(default_factory=dict)


def reaction(history: History, since: float) -> Reaction:
    """The job's reaction after ``since``: its first error (a query that terminated with an exception, a
    driver that exited with a non-zero code), and the micro-batches it ran after it."""
    after = [b for b in history.micro_batches if b.start >= since]
    failure = first_failure(history.timeline, since)
    if failure is not None and not [b for b in after if b.start > failure.t]:
        return Reaction("failed", failure_line(failure), failure.t, len(after))
    return Reaction("went_on", None, None, len(after), after[0].batch_id if after else None)


def first_failure(timeline: list[TimelineEvent], since: float) -> TimelineEvent | None:
    """The first sign after ``since`` that the job failed: a query terminated with an exception, or a driver
    exit with a non-zero code (what the driver's supervisor saw)."""
    for e in sorted(timeline, key=lambda e: e.t):
        if e.t < since:
            continue
        if e.kind == Kind.QUERY_TERMINATED and Failure.of(e).exception:
            return e
        if e.kind == Kind.DRIVER_EXITED and Exited.of(e).failed:
            return e
    return None


def failure_line(e: TimelineEvent) -> str:
    if e.kind == Kind.QUERY_TERMINATED:
        return str(Failure.of(e).exception).strip().splitlines()[0][:300]
    return f"the driver exited with code {Exited.of(e).code}"


def destroyed_ids(history: History, detail: Mapping[str, Any]) -> np.ndarray:
    """The ids of the records the fault destroyed: acknowledged before ``destroyed_at`` at an offset of a
    destroyed range of their partition."""
    sent = history.sent
    if sent.partition is None or sent.offset is None:
        return np.empty(0, np.int64)
    mask = np.zeros(len(sent), np.bool_)
    before = sent.send_ts < float(detail.get("destroyed_at", np.inf))
    for part, (lo, hi) in detail["destroyed"].items():
        span = (sent.partition == int(part)) & (sent.offset >= int(lo))
        if hi is not None:
            span &= sent.offset < int(hi)
        mask |= span & before
    return sent.ids[mask]


def _plural(n: int, what: str, many: str = "s") -> str:
    return f"{n} {what}{'' if n == 1 else many}"


class Damage:
    """Judges every fault that destroyed input, damaged the checkpoint or added partitions (see the module
    docstring), from the one :class:`~.guarantee.Validation` it is given."""

    name = "damage"

    def __init__(self, validation: Validation) -> None:
        self.validation = validation

    def check(self, history: History) -> CheckResult:
        judged = [f for f in history.injected() if any(k in f.detail for k in JUDGED)]
        if not judged:
            return DamageResult(self.name, True, [], {"faults": 0})
        v = self.validation.check(history)
        if not v.per_record or v.report is None:
            return DamageResult(self.name, None, reason=_NO_VERDICT_SHORT)
        out = DamageResult(self.name, True, [], {"faults": len(judged)})
        for f in judged:
            held, line, nums = self._judge(history, v.report, f)
            out.ok = bool(out.ok) and held
            out.lines.append(f"damage: {line}")
            out.reactions[f.label] = str(nums.get("reaction", ""))
            out.numbers.update({f"{k}[{f.label}]" if len(judged) > 1 else k: n for k, n in nums.items()})
        return out

    def _judge(self, history: History, report: GuaranteeReport, f: FaultRecord) -> tuple[bool, str, dict[str, Any]]:
        if "added" in f.detail:
            return added_partitions(history, report, f)
        since = f.healed_at if "damage" in f.detail and f.healed_at is not None else f.injected_at
        r = reaction(history, float(since or 0.0))
        gap = np.empty(0, np.int64)
        what = f"{f.label}: "
        if "destroyed" in f.detail:
            ids = destroyed_ids(history, f.detail)
            gap = np.intersect1d(ids, report.lost_ids)
            what += (f"destroyed {_plural(len(ids), 'record')} of {f.detail.get('topic')}, "
                     f"{len(gap)} of them not read by the job yet (the gap); ")
        else:
            what += f"{f.detail['file']} {f.detail['damage']}; "
        beyond = int(np.setdiff1d(report.lost_ids, gap).size)
        nums = {"reaction": r.kind, "gap": int(len(gap)), "lost_beyond_gap": beyond, "incorrect": report.incorrect}
        if r.kind == "failed":
            after = float(r.t or 0.0) - float(since or 0.0)
            return True, what + f"the job FAILED LOUDLY {after:.1f}s later: {r.error}", nums
        return self._went_on(f, r, report, what, gap, beyond, nums)

    @staticmethod
    def _went_on(f: FaultRecord, r: Reaction, report: GuaranteeReport, what: str, gap: np.ndarray, beyond: int,
                 nums: dict[str, Any]) -> tuple[bool, str, dict[str, Any]]:
        ran = f"ran {_plural(r.batches, 'micro-batch', 'es')}"
        if r.first_batch is not None:
            ran += f" from batch {r.first_batch}"
        replay = f.detail.get("replays")  # the batch the damage makes run again (a dropped commit's)
        if replay is not None and r.first_batch is not None and r.first_batch <= replay:
            ran += f" (batch {r.first_batch} again: a replay; {report.duplicates} duplicate appearance(s))"
        if len(gap) == 0 and beyond == 0 and report.incorrect == 0:
            nums["reaction"] = "recovered"
            return True, what + f"the job recovered: it {ran}, nothing lost, nothing incorrect", nums
        wrong = [f"{_plural(len(gap), 'record')} of the gap lost silently" if len(gap) else "",
                 f"{beyond} lost beyond it" if beyond else "",
                 f"{report.incorrect} incorrect" if report.incorrect else ""]
        return False, what + f"the job WENT ON without failing: it {ran}; " + ", ".join(w for w in wrong if w), nums


def added_partitions(history: History, report: GuaranteeReport, f: FaultRecord) -> tuple[bool, str, dict[str, Any]]:
    """Whether the job read the records of the partitions a fault added, and from which offset of each."""
    sent = history.sent
    added = [int(p) for p in f.detail["added"]]
    if sent.partition is None or sent.offset is None:
        return True, f"{f.label}: the records' partitions are unknown", {}
    lost = np.isin(sent.ids, report.lost_ids)
    parts = []
    n_new = n_read = 0
    for p in added:
        mine = sent.partition == p
        n_new += int(mine.sum())
        read = mine & ~lost
        n_read += int(read.sum())
        first = int(sent.offset[read].min()) if read.any() else None
        parts.append(f"{p}: {int(read.sum())}/{int(mine.sum())}" + ("" if first is None else f" from offset {first}"))
    line = (f"{f.label}: partitions {added} added; their records read by the job: {'; '.join(parts)}"
            + (" (from the earliest offset: Spark reads a new partition from its start)" if n_new == n_read else ""))
    if n_new == 0:
        line += " -- no record reached them (the producer did not see them)"
    return n_new == n_read, line, {"new_partition_records": n_new, "new_partition_records_read": n_read}
