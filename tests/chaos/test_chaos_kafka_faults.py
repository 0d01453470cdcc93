"""Broker faults and poison input, in one run of the at-least-once example (``shared_run``): five
poison records at +8 s, then the leader broker of an input partition down at +12 s for 8 s. Each test
asserts the effect of its own fault.

- Poison (malformed) records are filtered by the example pipelines: the query survives them and
  every good record is processed (poison ids are not expected in the output).
- A broker down (the leader of an input partition) stalls reads and writes of its partitions; the
  idempotent producer retries, the job resumes when it is back: nothing lost.

The poison comes first because it leaves no mark on the output: the broker's fault then has its own
window to the end of the load (each fault's metrics end where the next one begins), and its baseline
is the 8 s of load before the poison.
"""

import pytest
from chaos_helpers import fault_metrics, with_faults

from pytest_streamchaos import kill_broker, poison_records

ALO = "pipelines/enrich_at_least_once.py"
POISON_THEN_BROKER = (poison_records(count=5, after=8), kill_broker(after=12, restart_after=8))


def run_poison_then_broker(shared_run):
    run = shared_run(ALO, rate=200, duration=34, guarantee="at-least-once")
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    return run


@pytest.mark.slow  # ./dev test's budget: docs/setup.md#slow-tests
@pytest.mark.chaos
@with_faults(POISON_THEN_BROKER)
def test_leader_broker_down_then_up_loses_nothing(shared_run):
    run = run_poison_then_broker(shared_run)
    assert run.generator.failed == 0
    # the stall showed in the output (reads of the broker's partitions stopped) and the job recovered
    # once the broker was back
    fault = fault_metrics(run, "kill_broker")
    assert fault.output_symptom is not None, fault
    assert fault.recovered, fault
    # the effect the fault claims: the killed broker led an input partition, and another broker took over
    moved = [e for e in run.timeline if e.kind == "leader_elected" and "-in[" in e.target and e.t >= fault.t]
    assert moved, "a new leader of the killed broker's input partition should be on the timeline"
    assert run.lost == 0


@pytest.mark.slow  # ./dev test's budget: no broker fault runs by default (docs/setup.md#slow-tests)
@pytest.mark.chaos
@with_faults(POISON_THEN_BROKER)
def test_poison_records_do_not_crash_the_query(shared_run):
    run = run_poison_then_broker(shared_run)
    poisoned = run.poisoned_ids
    assert len(poisoned) == 5
    assert run.driver_launches == 1 and not any(e.kind == "driver_exited" for e in run.timeline)
