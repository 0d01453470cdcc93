"""One chaos run: topics, collector, the user's job, load, faults, drain, verdict.

:class:`Chaos` is the runner the ``chaos`` fixture (:class:`~pytest_streamchaos.harness.ChaosFixture`) holds.
``chaos.run(job, ...)`` checks its arguments (:mod:`.spec`) and goes through the phases of
docs/job-contract.md#run-phases (:mod:`.phases`, in order by :class:`~.run.Run`): **warm-up** (until output flows and
micro-batches are stable; the startup backlog is not part of the baseline), **load** for
``duration`` seconds from steady state with the test's faults on their timeline, then **drain**
(the generator stops, the run continues until the outputs settle). Everything it starts is
stopped on every exit path.
"""

from pytest_streamchaos.runner.chaos import Chaos
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.runner.groups import JobSetup, Load, Timing, Watch
from pytest_streamchaos.runner.phases.drain import committed_past, input_end_offsets
from pytest_streamchaos.runner.phases.tracking import resumed_from_earlier
from pytest_streamchaos.runner.spec import (
    GUARANTEES,
    PLACEHOLDERS,
    RunSpec,
    check_args,
    check_run_args,
    check_stale_checkpoint,
    resolve_job,
)

__all__ = [
    "GUARANTEES",
    "PLACEHOLDERS",
    "Chaos",
    "JobSetup",
    "Load",
    "RunError",
    "RunSpec",
    "Timing",
    "Watch",
    "check_args",
    "check_run_args",
    "check_stale_checkpoint",
    "committed_past",
    "input_end_offsets",
    "resolve_job",
    "resumed_from_earlier",
]
