"""A catalogue of fault kinds as the search sees them, for the search's unit tests (synthetic: the
plugin builds the real one from the fault registry)."""

from __future__ import annotations

from pytest_streamchaos.search.kinds import KindInfo

#: the process faults of today's stack as the search sees them
CATALOGUE: dict[str, KindInfo] = {k.name: k for k in (
    KindInfo("kill_driver", "driver", ("driver",),
             ("between_batches", "offsets_logged", "tasks_running", "output_visible_uncommitted")),
    KindInfo("kill_executor", "executor", ("executor@worker-0", "executor@worker-1"),
             ("between_batches", "offsets_logged", "tasks_running", "output_visible_uncommitted", "state_commit"),
             interchangeable=(("executor@worker-0", "executor@worker-1"),)),
    KindInfo("kill_worker", "executor", ("worker-0", "worker-1"),
             ("between_batches", "offsets_logged", "tasks_running", "output_visible_uncommitted", "state_commit"),
             interchangeable=(("worker-0", "worker-1"),)),
    KindInfo("kill_broker", "broker", ("input_leader", "output_leader"),
             ("between_batches", "offsets_logged", "tasks_running", "output_visible_uncommitted"),
             serves=(("input_leader", "input"), ("output_leader", "output"))),
)}
