"""The exactly-once transaction check: how the duplicate / exactly-once verdict was reached.

The collector reads the output with a ``read_committed`` consumer, on the real brokers: it sees what a
downstream consumer sees (records of aborted transactions never), never a sink's own bookkeeping. The
transaction markers it saw (per output partition) say whether the job wrote transactionally."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_streamchaos.history import History

from ..checker import CheckResult
from ..validate import EOS_READ_COMMITTED, exactly_once_check


@dataclass
class TransactionsResult(CheckResult):
    """How the verdict was reached: ``method``, ``status``, ``explanation``, ``verify_with`` and the
    ``transaction_markers`` (output partition -> markers seen)."""

    method: str = EOS_READ_COMMITTED
    state: str = "verified"
    explanation: str = ""
    verify_with: str | None = None
    transaction_markers: dict[str, int] = field(default_factory=dict)

    def as_report(self) -> dict[str, object]:
        """The JSON the run's report has kept under ``exactly_once_check`` (docs/report-schema.md)."""
        return {"method": self.method, "status": self.state, "reason": self.explanation,
                "verify_with": self.verify_with, "transaction_markers": dict(self.transaction_markers)}


class ExactlyOnceTransactions:
    """The collector's ``read_committed`` reading and the transaction markers it saw; not judged
    without a per-record verdict or without markers recorded (a bare trace)."""

    name = "exactly_once"

    def check(self, history: History) -> CheckResult:
        markers = history.facts.transaction_markers
        if not history.per_record or markers is None:
            why = ("no per-record verdict: the job's output is not readable" if not history.per_record
                   else "the history records no transaction markers")
            return CheckResult(self.name, None, reason=why)
        c = exactly_once_check(markers)
        line = (f"exactly-once check: {c['method']} ({c['status']}): {c['reason']}"
                + (f"; to verify: {c['verify_with']}" if c.get("verify_with") else ""))
        return TransactionsResult(self.name, True, [line], {"transaction_markers": dict(markers)},
                                  method=c["method"], state=c["status"], explanation=c["reason"],
                                  verify_with=c["verify_with"], transaction_markers=dict(markers))
