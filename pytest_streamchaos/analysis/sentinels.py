"""What a metric is when there is no number: :data:`NOT_RECOVERED` (a fault the job did not recover from)
and :class:`NotMeasured` (a metric the run could not measure, and why), both safe to assert on."""

from __future__ import annotations

import math
import numbers
from typing import Any


class NotMeasurable(AssertionError):
    """A metric this run could not measure was compared, converted or computed with: ``assert
    run.downtime < 10`` fails naming why, instead of passing on a number nothing measured."""


class NotMeasured:
    """The value of a metric the run could not measure (``ChaosRun.downtime``, ``recovery_time``,
    ``failure_cost``), and why: it prints as ``not measurable``, is falsy, equals nothing but itself, and
    any comparison, arithmetic or ``float()`` raises :class:`NotMeasurable` with the reason -- a bound
    asserted on it can neither pass nor fail silently. ``isinstance(v, NotMeasured)`` tests for it."""

    __slots__ = ("name", "reason")

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    def _refuse(self, *_: object) -> Any:
        raise NotMeasurable(f"{self.name} was not measured on this run, so no bound on it can be checked: "
                            f"{self.reason}")

    __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __float__ = __int__ = __round__ = __abs__ = __neg__ = _refuse

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NotMeasured) and (other.name, other.reason) == (self.name, self.reason)

    def __hash__(self) -> int:
        return hash(("NotMeasured", self.name, self.reason))

    def __repr__(self) -> str:
        return f"not measurable ({self.reason})"

    def __str__(self) -> str:
        return "not measurable"

    def __format__(self, spec: str) -> str:
        return "not measurable"


class NotRecovered:
    """The result "did not recover": greater than every number, so ``assert t < 30`` fails readably."""

    _instance: NotRecovered | None = None

    def __new__(cls) -> NotRecovered:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "not recovered"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return "not recovered"

    def __reduce__(self) -> str:
        return "NOT_RECOVERED"

    def __float__(self) -> float:
        return math.inf

    def __hash__(self) -> int:
        return hash("NOT_RECOVERED")

    def __eq__(self, other: object) -> bool:
        return other is self

    def __lt__(self, other: object) -> bool:
        if other is self or isinstance(other, numbers.Real):
            return False
        return NotImplemented

    def __le__(self, other: object) -> bool:
        if other is self:
            return True
        if isinstance(other, numbers.Real):
            return False
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if other is self:
            return False
        if isinstance(other, numbers.Real):
            return True
        return NotImplemented

    def __ge__(self, other: object) -> bool:
        if other is self or isinstance(other, numbers.Real):
            return True
        return NotImplemented


#: Sentinel recovery time of a fault the job did not recover from (repr ``not recovered``).
NOT_RECOVERED = NotRecovered()

RecoveryTime = float | NotRecovered
