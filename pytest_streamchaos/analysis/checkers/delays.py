"""The delay-class check: did each network delay do what the test stated (PD>TO: the system noticed;
PD<TO: it did not)? See :mod:`pytest_streamchaos.analysis.delay_class`."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_streamchaos.history import History

from ..checker import CheckResult
from ..delay_class import DelayOutcome, judge_delays


@dataclass
class DelayResult(CheckResult):
    """Every delay that took effect, with its outcome."""

    outcomes: list[DelayOutcome] = field(default_factory=list)


class DelayClasses:
    """Per ``network_delay`` of the run (its governing timeout in the history's facts): the class
    observed against the class stated. Violated when one did not do what was stated; not judged when
    no delay stated a class."""

    name = "delay_classes"

    def check(self, history: History) -> DelayResult:
        outcomes = judge_delays(history, history.facts.delays)
        stated = [o.as_stated for o in outcomes if o.as_stated is not None]
        ok = None if not stated else all(stated)
        numbers = {"delays": len(outcomes), "as_stated": sum(stated), "stated": len(stated)}
        reason = "" if stated else "no network delay with a stated class (above_timeout=) took effect"
        return DelayResult(self.name, ok, [f"delay: {o.describe()}" for o in outcomes], numbers, reason=reason,
                           outcomes=outcomes)
