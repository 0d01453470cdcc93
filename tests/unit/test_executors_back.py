"""A load ended on recovery waits for the job's executors to be back (``history.executors_back``): on busy
cores a killed worker re-registered 21 s after its restart, after the job had recovered on one executor."""

from pytest_streamchaos.events import Kind
from pytest_streamchaos.history import executors_back
from pytest_streamchaos.records import TimelineEvent


def added(t: float, n: int, app: str = "app-1") -> TimelineEvent:
    return TimelineEvent(t, Kind.EXECUTOR_ADDED, f"executor-{n}", {"app_id": app})


def removed(t: float, n: int, app: str = "app-1") -> TimelineEvent:
    return TimelineEvent(t, Kind.EXECUTOR_REMOVED, f"executor-{n}", {"app_id": app})


START = [added(1, 0), added(2, 1)]
KILL = TimelineEvent(10, Kind.FAULT_INJECTED, "worker-0")


def test_a_killed_workers_executor_is_back_only_once_its_replacement_is_added() -> None:
    lost = [*START, KILL, removed(10.5, 0), TimelineEvent(15, Kind.FAULT_HEALED, "worker-0")]
    assert not executors_back(lost)
    assert executors_back([*lost, TimelineEvent(30, Kind.WORKER_REGISTERED, "worker-0"), added(35, 2)])


def test_a_relaunched_driver_counts_the_executors_of_its_new_application() -> None:
    # the dead application's executors are never reported removed: the new one's count
    relaunched = [*START, TimelineEvent(10, Kind.FAULT_INJECTED, "driver"), added(30, 0, "app-2")]
    assert not executors_back(relaunched)
    assert executors_back([*relaunched, added(31, 1, "app-2")])


def test_without_a_fault_or_executor_events_nothing_is_awaited() -> None:
    assert executors_back(START)
    assert executors_back([KILL])


def test_a_worker_still_down_is_not_awaited() -> None:
    # a kill without restart_after heals at the end of the load: until then its executor cannot come back
    # (CI: the load ran out its 60 s window waiting for it, and never ended on recovery)
    still_down = [*START, KILL, removed(10.5, 0)]
    assert executors_back(still_down)
    assert not executors_back([*still_down, TimelineEvent(80, Kind.FAULT_HEALED, "worker-0")])
