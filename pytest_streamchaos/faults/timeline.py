"""The fault timeline: when each fault fires and heals, and what actually happened.

:func:`plan` turns validated :class:`FaultSpec` objects into concrete occurrences on the run's clock
(offsets from steady state). It is pure so that schedules are unit-tested without a stack.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_streamchaos.faults.spec import FaultSpec


@dataclass(frozen=True)
class PlannedFault:
    """One occurrence of a fault. ``at`` is seconds after steady state (None: aimed at a moment,
    fired when the moment is detected); ``heal_after`` is seconds after injection (None: not healed
    by the plugin during the run)."""

    spec: FaultSpec
    occurrence: int
    at: float | None
    heal_after: float | None

    @property
    def label(self) -> str:
        n = f"#{self.occurrence + 1}" if self.spec.times > 1 else ""
        return self.spec.label + n


def plan(specs: list[FaultSpec]) -> list[PlannedFault]:
    """Expand recurrent faults and order all occurrences by time (aimed faults first: they arm at
    steady state + ``after`` and fire when their moment comes)."""
    out: list[PlannedFault] = []
    for spec in specs:
        heal = spec.duration if spec.duration is not None else spec.restart_after
        for k in range(spec.times):
            at = spec.after + (spec.every or 0.0) * k
            out.append(PlannedFault(spec, k, None if spec.when else at, heal))
    return sorted(out, key=lambda p: (p.at is not None, p.at if p.at is not None else p.spec.after))


def horizon(planned: list[PlannedFault]) -> float:
    """Seconds after steady state until the last planned fault has fired and healed."""
    end = 0.0
    for p in planned:
        # an aimed fault arms at ``after`` and fires when its moment comes (usually within a
        # micro-batch or two); the run only has to give it room to arm and heal
        start = p.at if p.at is not None else p.spec.after
        end = max(end, start + (p.heal_after or 0.0))
    return end
