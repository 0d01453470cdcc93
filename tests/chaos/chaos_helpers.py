"""Helpers of the chaos tests that share one scenario's run (``shared_run``) among tests that each
assert the effect of one of its faults."""


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
