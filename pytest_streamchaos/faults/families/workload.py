"""The workload family: faults in what the job is fed, not in what runs it -- malformed records sent
through the generator (the job's parser must survive them)."""

from __future__ import annotations

from typing import Any

from pytest_streamchaos.faults.kind import FaultKind
from pytest_streamchaos.faults.spec import number
from pytest_streamchaos.faults.timeline import PlannedFault


class PoisonRecords(FaultKind[None]):
    name = "poison_records"
    doc = "send malformed records through the generator"
    args = {"count": "how many poison records (default 1)"}

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        params["count"] = int(number(cls.name, "count", params.get("count", 1), minimum=1, integer=True))

    def target(self, planned: PlannedFault) -> str:
        return "generator"

    def inject(self, planned: PlannedFault) -> None:
        if self.ctx.poison is None:
            raise RuntimeError("the generator has no poison schedule")
        self.ctx.poison.add(int(planned.spec.params.get("count", 1)))


KINDS = (PoisonRecords,)
