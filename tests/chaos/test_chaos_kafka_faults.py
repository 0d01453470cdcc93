"""Broker faults and poison input.

- A broker down (the leader of an input partition) stalls reads and writes of its partitions; the
  idempotent producer retries, the job resumes when it is back: nothing lost.
- Poison (malformed) records are filtered by the example pipelines: the query survives them and
  every good record is processed (poison ids are not expected in the output).
"""

import pytest

from pytest_streamchaos import kill_broker, poison_records

ALO = "pipelines/enrich_at_least_once.py"


@pytest.mark.chaos
@kill_broker(after=8, restart_after=8)
def test_leader_broker_down_then_up_loses_nothing(chaos):
    run = chaos.run(ALO, rate=200, duration=30, guarantee="at-least-once")
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    assert run.meta["generator"]["failed"] == 0


@pytest.mark.chaos
@poison_records(count=5, after=5)
def test_poison_records_do_not_crash_the_query(chaos):
    run = chaos.run(ALO, rate=200, duration=20, guarantee="at-least-once")
    print(run.describe())
    poisoned = run.meta["poisoned_ids"]
    assert len(poisoned) == 5
    assert run.lost == 0 and run.incorrect == 0
    assert run.meta["driver_launches"] == 1 and not any(e.kind == "driver_exited" for e in run.timeline)
