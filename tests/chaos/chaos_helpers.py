"""Helpers of the chaos tests: for tests that share one scenario's run (``shared_run``) and each
assert the effect of one of its faults, and for what a run without ``duration`` owes its faults."""

from pytest_streamchaos.faults.timeline import RECOVERY_WINDOW_S


def with_faults(marks):
    """Decorate a test with every fault mark of ``marks`` (one scenario shared by several tests)."""
    def apply(fn):
        for m in reversed(marks):
            fn = m(fn)
        return fn
    return apply


def fault_metrics(run, kind):
    """The metrics of the run's fault of ``kind``."""
    return next(f for f in run.faults if f.kind == kind)


def assert_load_outlasted_the_recovery(run):
    """A run without ``duration``: its load ended once the faults' recovery was settled, or it lasted a
    whole recovery window after the last fault's actual injection (an aimed fault fires when its moment
    comes, which can be well after its ``after``) -- never a window counted from the plan alone."""
    injected = max(e.t for e in run.timeline if e.kind == "fault_injected")
    (load_end,) = [e.t for e in run.timeline if e.kind == "load_end"]
    ended_early = any(e.kind == "load_ended_on_recovery" for e in run.timeline)
    assert ended_early or load_end - injected >= RECOVERY_WINDOW_S - 1, (run.load, injected, load_end)
    # the run recovered: every fault, or a chain of faults each struck by the next before it was back, as one
    assert run.metrics.recovered, run.faults
