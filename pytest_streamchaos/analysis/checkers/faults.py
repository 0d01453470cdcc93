"""The faults-as-planned check: a fault that never happened (not injected, not confirmed, stopped
acting, never healed, its aimed moment never came) makes the run's verdict meaningless, so the plugin
fails such a run whatever else it shows."""

from __future__ import annotations

from pytest_streamchaos.history import History

from ..checker import CheckResult


def fault_errors(history: History) -> list[str]:
    """What went wrong with the faults: the scheduler's own account for a run of the harness, else what
    the timeline says (``label: error``, ``label: skipped: why``)."""
    if history.facts.recorded:
        return list(history.facts.fault_errors)
    out = [f"{f.label}: {e}" for f in history.faults for e in f.errors]
    return out + [f"{f.label}: skipped: {f.skipped}" for f in history.faults if f.skipped]


class FaultsAsPlanned:
    """Every planned fault happened: injected, confirmed, acting while active, healed."""

    name = "faults"

    def check(self, history: History) -> CheckResult:
        errors = fault_errors(history)
        injected = history.injected()
        numbers = {"injected": len(injected), "errors": len(errors),
                   "aimed": sum(f.aim is not None for f in injected), "hit": sum(bool(f.hit) for f in injected)}
        return CheckResult(self.name, not errors, errors, numbers)
