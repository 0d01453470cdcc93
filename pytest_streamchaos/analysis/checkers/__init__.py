"""The checkers every run is judged with, one module per concern (a new one is one module here, plus a
line in :func:`default_checkers` when every run should have it; a backend's own -- what the job did about a
fault of its service -- is in its folder, named by its registry entry's ``checks``, handed to :func:`add_checks`
when the session starts, and judges every run too):

- :mod:`.guarantee`: :class:`Validation` (the outputs against the oracle, once), :class:`Lost`,
  :class:`Duplicates`, :class:`Incorrect`, :class:`GuaranteeDelivered`, :class:`Reliability`;
- :mod:`.recovery`: :class:`Recovery` (the metrics, once), :class:`Downtime`, :class:`RecoveryTime`,
  :class:`FailureCost`;
- :mod:`.transactions`: :class:`ExactlyOnceTransactions`, how the exactly-once verdict was reached;
- :mod:`.delays`: :class:`DelayClasses`, each network delay's class observed against the stated one;
- :mod:`.observer`: :class:`ObserverCheck`, the network faults spared the harness's clients;
- :mod:`.faults`: :class:`FaultsAsPlanned`, every planned fault happened;
- :mod:`.damage`: :class:`Damage`, what the job did about input a fault destroyed, a checkpoint it damaged,
  partitions it added (failed loudly, recovered, or went on losing records);
- :mod:`.windows`: :class:`Windows`, each window of the run (a fault's, a schedule's of one history) judged on
  its own;
- :mod:`.reference`: :class:`ReferenceCheck`, the outputs against a fault-free run's (added by the run
  when the test asks for a reference, not a default).

A test's own checker needs none of this: anything with a ``name`` and ``check(history)``
(:class:`~pytest_streamchaos.analysis.checker.Checker`), given to ``run.check(...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

from ..checker import Checker
from ..metrics import MetricParams
from ..oracle import Oracle
from .damage import Damage, DamageResult
from .delays import DelayClasses, DelayResult
from .faults import FaultsAsPlanned, fault_errors
from .guarantee import (
    NO_VERDICT,
    Duplicates,
    GuaranteeDelivered,
    Incorrect,
    Lost,
    Reliability,
    Validation,
    ValidationResult,
    no_verdict,
)
from .observer import ObserverCheck, ObserverResult
from .recovery import Downtime, FailureCost, Recovery, RecoveryResult, RecoveryTime
from .reference import ReferenceCheck, ReferenceResult, comparison_of, reference_unavailable
from .transactions import ExactlyOnceTransactions, TransactionsResult
from .windows import Windows, WindowsResult

__all__ = [
    "NO_VERDICT",
    "no_verdict",
    "Damage",
    "DamageResult",
    "DefaultCheckers",
    "DelayClasses",
    "DelayResult",
    "Downtime",
    "Duplicates",
    "ExactlyOnceTransactions",
    "FailureCost",
    "FaultsAsPlanned",
    "GuaranteeDelivered",
    "Incorrect",
    "Lost",
    "ObserverCheck",
    "ObserverResult",
    "Recovery",
    "RecoveryResult",
    "RecoveryTime",
    "ReferenceCheck",
    "ReferenceResult",
    "comparison_of",
    "reference_unavailable",
    "Reliability",
    "TransactionsResult",
    "Validation",
    "ValidationResult",
    "Windows",
    "WindowsResult",
    "add_checks",
    "default_checkers",
    "fault_errors",
]


#: the backends' own checks by their entries' names of them (``module:name``), each made anew for every run: the
#: plugin adds them when the session starts (:func:`add_checks`), as it adds their timeline kinds -- the analysis
#: imports nothing of the backends
_BACKEND_CHECKS: dict[str, Callable[[], Checker]] = {}


def add_checks(makers: Mapping[str, Callable[[], object]]) -> None:
    """Judge every run with the checkers ``makers`` make too (the backends' entries' ``checks``, by name: one
    added twice is added once), after the default ones."""
    for name, make in makers.items():
        _BACKEND_CHECKS.setdefault(name, cast("Callable[[], Checker]", make))


@dataclass(frozen=True)
class DefaultCheckers:
    """The checkers of every run, with the two that the others read (``validation``, ``recovery``)."""

    validation: Validation
    recovery: Recovery
    all: tuple[Checker, ...]


def default_checkers(oracle: Oracle | None = None, guarantee: str = "exactly-once",
                     params: MetricParams | None = None) -> DefaultCheckers:
    """The checkers ``ChaosRun`` judges every run with: the outputs against ``oracle`` and the declared
    ``guarantee``, the recovery metrics with ``params``, the checks of the run's facts, and the backends' own
    checks (:func:`add_checks`: the object store's, what the job's S3A did about a fault of the store)."""
    validation = Validation(oracle, guarantee)
    recovery = Recovery(validation, params)
    return DefaultCheckers(validation, recovery, (
        validation, Lost(validation), Duplicates(validation), Incorrect(validation), GuaranteeDelivered(validation),
        Reliability(validation), recovery, Downtime(recovery), RecoveryTime(recovery), FailureCost(recovery),
        ExactlyOnceTransactions(), DelayClasses(), ObserverCheck(), FaultsAsPlanned(), Damage(validation),
        Windows(validation, recovery), *(make() for make in _BACKEND_CHECKS.values())))
