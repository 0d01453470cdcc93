"""Feed several input topics with the same ids at the same pace: the workload of a join.

A job that joins ``orders`` with ``payments`` on the order id needs both sides of each id. One
:class:`~pytest_streamchaos.workload.generator.Generator` per topic, with the same seed, rate and
first id, sends id ``n`` on every topic at about the same moment (each with its own record factory);
the ground truth is the ids acknowledged on every topic (:func:`~pytest_streamchaos.records.join_sent`).
"""

from __future__ import annotations

from typing import Any

from pytest_streamchaos.records import SentRecords, join_sent


class JoinedGenerators:
    """Several generators driven as one (the interface a run uses)."""

    def __init__(self, parts: list[Any]) -> None:
        if not parts:
            raise ValueError("JoinedGenerators needs at least one generator")
        self.parts = parts

    def start(self) -> JoinedGenerators:
        for g in self.parts:
            g.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        errors = []
        for g in self.parts:
            try:
                g.stop(timeout)
            except Exception as e:  # stop every generator, then report
                errors.append(e)
        if errors:
            raise errors[0]

    @property
    def failure(self) -> BaseException | None:
        """The first generator's early end (see ``Generator.failure``), None while all are fine."""
        return next((g.failure for g in self.parts if g.failure is not None), None)

    def claim_failure(self) -> BaseException | None:
        """:attr:`failure`, which the caller now reports (``stop`` no longer raises it)."""
        errors = [g.claim_failure() for g in self.parts]  # claim them all: stop() raises none of them
        return next((e for e in errors if e is not None), None)

    @property
    def running(self) -> bool:
        return any(g.running for g in self.parts)

    @property
    def acked(self) -> int:
        return min(g.acked for g in self.parts)

    def sent(self) -> SentRecords:
        return join_sent([g.sent() for g in self.parts])

    def stats(self) -> dict[str, object]:
        if len(self.parts) == 1:
            return self.parts[0].stats()
        return {g.topic: g.stats() for g in self.parts}

