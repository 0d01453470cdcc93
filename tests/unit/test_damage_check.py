"""The damage check on synthetic histories with known answers: input records a fault destroyed (the gap: those
the job had not read), a checkpoint file it damaged, partitions it added -- and the job's reaction: failed
loudly (Spark's own error named), recovered (the batch it replayed), or went on losing records silently."""

from __future__ import annotations

from typing import Any

import numpy as np
from synthetic import T0, stateless_trace

from pytest_streamchaos.analysis import checkers as ch
from pytest_streamchaos.analysis.checker import run_all
from pytest_streamchaos.history import History
from pytest_streamchaos.records import FAULT_INJECTED, SentRecords, TimelineEvent, Trace

RATE = 100.0  #: records per second; id i sent at T0 + i / RATE, to partition i % 2 at offset i // 2
ERROR = ("org.apache.spark.sql.kafka010.KafkaIllegalStateException: Some data may have been lost because they are "
         "not available in Kafka any more;\neither the data was aged out by Kafka")


def trace(*, drop: Any = None, duplicate: Any = None, stop_at: float | None = None, partitions: int = 2,
          events: list[TimelineEvent] = (), batches_from: float = 0.0, first_batch: int = 0) -> History:
    """60 s at 100 records/s over ``partitions`` partitions, with ``events`` on the timeline and one micro-batch
    a second from ``batches_from`` (numbered from ``first_batch``) until ``stop_at`` (the job dies)."""
    t = stateless_trace(rate=RATE, duration=60, drop=drop, duplicate=duplicate, stop_at=stop_at)
    s = t.sent
    sent = SentRecords(s.ids, s.keys, s.event_ts, s.send_ts, partition=(s.ids % partitions).astype(np.int32),
                       offset=s.ids // partitions)
    batches = [{"batchId": first_batch + k, "t_start": T0 + batches_from + k, "t_end": T0 + batches_from + k + 0.5,
                "durationMs": {"triggerExecution": 500}, "numInputRows": 100}
               for k in range(int((stop_at or 60) - batches_from))]
    return History(Trace(sent, t.outputs, batches=batches, timeline=[*t.timeline, *events], phases=t.phases,
                         trigger_seconds=1.0))


def injected(at: float, label: str, healed: float | None = None, **detail: Any) -> list[TimelineEvent]:
    out = [TimelineEvent(T0 + at, FAULT_INJECTED, "invoices", {"fault": label.split("@")[0], "label": label,
                                                              **detail})]
    if healed is not None:
        out.append(TimelineEvent(T0 + healed, "fault_healed", "checkpoint", {"fault": label, "label": label}))
    return out


def damage(history: History, guarantee: str = "at-least-once") -> Any:
    return run_all(ch.default_checkers(guarantee=guarantee).all, history)["damage"]


def expired(at: float = 30.0) -> list[TimelineEvent]:
    """Every record up to +30 s deleted (offsets [0, 1500) of each partition): ids 0..2999."""
    return injected(at, "expire_records@30s", topic="invoices", destroyed={"0": [0, 1500], "1": [0, 1500]},
                    destroyed_at=T0 + at)


def test_a_run_without_such_a_fault_has_nothing_to_judge():
    r = damage(trace())
    assert r.ok is True and r.numbers == {"faults": 0} and r.lines == []


def test_destroyed_records_the_job_had_not_read_are_the_gap_and_a_loud_failure_holds():
    gap = np.arange(2900, 3000)  # the last second before the deletion: not read yet
    fail = TimelineEvent(T0 + 32, "query_terminated", "query", {"exception": ERROR})
    h = trace(drop=gap, stop_at=32, events=[*expired(), fail], batches_from=0)
    r = damage(h)
    assert r.ok is True, r.lines
    assert r.numbers["reaction"] == "failed" and r.numbers["gap"] == 100
    assert "destroyed 3000 records of invoices, 100 of them not read by the job yet (the gap)" in r.lines[0]
    assert "FAILED LOUDLY 2.0s later: org.apache.spark.sql.kafka010.KafkaIllegalStateException: Some data may have" \
        in r.lines[0]
    assert r.numbers["lost_beyond_gap"] > 0  # what came after the failure: the guarantee checks judge it
    assert run_all(ch.default_checkers(guarantee="at-least-once").all, h)["lost"].ok is False


def test_a_job_that_goes_on_without_the_gap_violates_it_and_counts_the_gap_exactly():
    gap = np.arange(2900, 3000)
    r = damage(trace(drop=gap, events=expired()))
    assert r.ok is False
    assert r.numbers == {"faults": 1, "reaction": "went_on", "gap": 100, "lost_beyond_gap": 0, "incorrect": 0}
    assert "WENT ON without failing" in r.lines[0] and "100 records of the gap lost silently" in r.lines[0]


def test_records_sent_after_the_destruction_at_the_same_offsets_are_not_destroyed():
    """A recreated topic's offsets start at 0 again: only what was acknowledged before the deletion was in it."""
    recreated = injected(30, "recreate_topic@30s", topic="invoices", destroyed={"0": [0, None], "1": [0, None]},
                         destroyed_at=T0 + 30)
    lost_after = np.arange(4000, 4010)  # lost later, for another reason: beyond the gap
    r = damage(trace(drop=lost_after, events=recreated))
    assert r.numbers["gap"] == 0 and r.numbers["lost_beyond_gap"] == 10 and r.ok is False
    assert "destroyed 3000 records" in r.lines[0] and "10 lost beyond it" in r.lines[0]


def test_a_dropped_commit_replayed_is_a_recovery_with_its_duplicates_named():
    batch_12 = np.arange(1200, 1300)
    dropped = injected(12.6, "drop_commit when=between_batches", healed=13.0, damage="deleted",
                       file="commits/12", batch=12, replays=12)
    h = trace(duplicate=batch_12, events=dropped, batches_from=15, first_batch=12)
    r = damage(h)
    assert r.ok is True and r.numbers["reaction"] == "recovered"
    assert "commits/12 deleted; the job recovered: it ran 45 micro-batches from batch 12 (batch 12 again: a " \
           "replay; 100 duplicate appearance(s)), nothing lost, nothing incorrect" in r.lines[0]


def test_a_torn_checkpoint_that_stops_the_restarted_driver_fails_loudly():
    torn = injected(20, "tear_offsets when=offsets_logged", healed=20.5, damage="truncated to 0 of 160 bytes",
                    file="offsets/20", batch=20)
    exit_ = TimelineEvent(T0 + 40, "driver_exited", "driver", {"code": 1})
    r = damage(trace(stop_at=20, events=[*torn, exit_]))
    assert r.ok is True and r.numbers["reaction"] == "failed"
    assert "offsets/20 truncated to 0 of 160 bytes; the job FAILED LOUDLY 19.5s later: the driver exited with " \
           "code 1" in r.lines[0]


def test_new_partitions_read_from_their_start_hold_and_a_late_start_is_counted():
    grown = injected(20, "add_partitions@20s count=3", topic="invoices", added=[2])
    r = damage(trace(partitions=3, events=grown))
    assert r.ok is True
    assert r.numbers == {"faults": 1, "new_partition_records": 2000, "new_partition_records_read": 2000}
    assert "partitions [2] added; their records read by the job: 2: 2000/2000 from offset 0 (from the earliest" \
        in r.lines[0]
    missed = damage(trace(partitions=3, events=grown, drop=np.arange(2, 62, 3)))  # offsets 0..19 of partition 2
    assert missed.ok is False and "2: 1980/2000 from offset 20" in missed.lines[0]
