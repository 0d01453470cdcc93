"""The S3 family: the object store a run's checkpoint or tables are on (``JobSetup(checkpoint="s3")``, or a job
whose code names ``s3a://``) going down, its link slow or cut, or its answers refused -- what object storage does
to a streaming job in production (a store's outage, a slow or broken network path, 503 SlowDown throttling).

- ``kill_s3``: the store's process killed (SIGKILL by default), started again on the same data after
  ``restart_after``; ``s3_store_ready`` on the timeline when its S3 gateway answers again.
- ``s3_delay`` / ``s3_partition``: Toxiproxy on the job's link to the store (only the job's S3A talks through
  it; the harness reads the store directly): every request and answer held ``ms``, or the link cut
  (``blackhole``: bytes vanish; ``refuse``: connections refused).
- ``s3_errors``: a share (``rate``) of the job's requests of some operations (``ops``: PUT, COPY, GET, HEAD,
  LIST, DELETE, MULTIPART) answered with an HTTP error (``status``: 503 SlowDown by default) by the store's
  proxy, which never touches a signed header; on heal ``s3_requests_refused`` says, per operation, how many
  it refused and how many of those the job sent again (S3A's retries).

What the job did about it -- retried, failed a batch's tasks, failed the query -- is the ``s3`` check's
(:mod:`pytest_streamchaos.stack.s3.check`, the storage entry's), from these events and Spark's own.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any, ClassVar, TypedDict

from pytest_streamchaos.faults.context import CONFIRM_KILL_S, signal_of
from pytest_streamchaos.faults.kind import FaultKind, H, Kill
from pytest_streamchaos.faults.spec import FaultSpecError, number
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.netem.links import ToxiproxyLink
from pytest_streamchaos.netem.toxics import ToxicFault, ToxicPartition
from pytest_streamchaos.stack.capabilities import ObjectStoreService, RefusalRule
from pytest_streamchaos.stack.s3 import S3Kind

#: the operations ``s3_errors`` can refuse (``stack/s3/ops.py``'s; not imported: the faults reach the store
#: through its protocol only)
OPS = ("PUT", "COPY", "GET", "HEAD", "LIST", "DELETE", "MULTIPART")
#: how long a probe of the job's way to the store waits for an answer
PROBE_S = 2.0


#: a line of the driver's log about S3: S3A's, the AWS SDK's, S3's error codes, a retry
S3_LINE = re.compile(r"s3a|S3AFileSystem|software\.amazon|com\.amazonaws|SlowDown|InternalError|Throttl|"
                     r"[Rr]etry|[Rr]etrying|ConnectException|Connection refused", re.IGNORECASE)


class S3Lines(TypedDict):
    """What a stretch of the driver's log says of S3 (the ``s3a_logged`` event's detail)."""

    lines: int
    retries: int
    first: str


def s3_lines(text: str) -> S3Lines:
    """What a stretch of the driver's log says of S3: how many lines (``lines``), how many of them name a retry
    (``retries``), and the first one (``first``, without its timestamp)."""
    found = [ln.strip() for ln in text.splitlines() if S3_LINE.search(ln) and not ln.lstrip().startswith("at ")]
    retries = sum(bool(re.search(r"[Rr]etr(y|ying|ies)", ln)) for ln in found)
    first = re.sub(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d\s*", "", found[0])[:240] if found else ""
    return {"lines": len(found), "retries": retries, "first": first}


class _OnStore(FaultKind[H]):
    """Base of the S3 faults: the run's object store (a run without one refuses them before it starts). Each
    notes where the driver's log was when it was injected and, on heal, records what the log said of S3 since
    (``s3a_logged``)."""

    store = ObjectStoreService

    def _store(self) -> ObjectStoreService:
        return self.ctx.store(ObjectStoreService)

    def target(self, planned: PlannedFault) -> str:
        return "s3"

    def _log_size(self) -> int:
        try:
            return self.ctx.job.log_path.stat().st_size
        except (OSError, AttributeError):
            return 0

    def _logged(self, planned: PlannedFault, since: int) -> None:
        """Record what the driver's log said of S3 from byte ``since`` on (one event; nothing without a log)."""
        try:
            with open(self.ctx.job.log_path, "rb") as log:
                log.seek(since)
                text = log.read(8 << 20).decode(errors="replace")
        except (OSError, AttributeError):
            return
        if self.ctx.recorder is not None:
            self.ctx.recorder.record(S3Kind.S3A_LOGGED, planned.label, **s3_lines(text))


class KillS3(_OnStore[int], Kill[int]):
    """Signal the store; heal starts it again on the same ports and data."""

    name = "kill_s3"
    doc = ("kill the object store (SeaweedFS); start it again on the same data after restart_after (default 0: at "
           "once)")
    default_restart_after = 0.0

    def inject(self, planned: PlannedFault) -> int:
        since = self._log_size()
        self._store().kill(signal_of(planned), wait=False)
        return since

    def confirm(self, planned: PlannedFault, since: int) -> dict[str, object]:
        store = self._store()
        store.wait_gone(CONFIRM_KILL_S)
        return {"store": "killed", "answers": store.answers()}

    def heal(self, planned: PlannedFault, since: int) -> None:
        store = self._store()
        store.restart(wait=False)
        self.ctx.watch(S3Kind.S3_STORE_READY, "s3", store.answers)
        self._logged(planned, since)


def probe(endpoint: str, timeout: float = PROBE_S) -> tuple[str, float]:
    """One unsigned request to ``endpoint`` (the store answers it with an error document, quickly): ``reply``
    (any HTTP answer), ``refused`` or ``silent``, and the seconds it took."""
    t0 = time.monotonic()
    try:
        urllib.request.urlopen(endpoint + "/", timeout=timeout).close()
        outcome = "reply"
    except urllib.error.HTTPError:
        outcome = "reply"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        outcome = "refused" if isinstance(reason, ConnectionRefusedError | ConnectionResetError) else "silent"
    return outcome, time.monotonic() - t0


class _OnLink(_OnStore[tuple[ToxicFault, int]]):
    """A fault on the job's link to the store, as Toxiproxy toxics on its proxy."""

    def _toxic(self, params: Mapping[str, Any], link: ToxiproxyLink) -> ToxicFault:
        raise NotImplementedError

    def inject(self, planned: PlannedFault) -> tuple[ToxicFault, int]:
        store = self._store()
        if store.link is None:
            raise RuntimeError(f"@{self.name} needs Toxiproxy on the job's link to the store: {store.link_reason}")
        since = self._log_size()
        fault = self._toxic(planned.spec.params, ToxiproxyLink([store.link]))
        fault.inject()
        return fault, since

    def check(self, planned: PlannedFault, handle: tuple[ToxicFault, int]) -> str | None:
        return handle[0].stopped_acting()

    def heal(self, planned: PlannedFault, handle: tuple[ToxicFault, int]) -> None:
        handle[0].heal()
        self._logged(planned, handle[1])


class S3Delay(_OnLink):
    """Every request and answer on the job's link to the store held ``ms`` (± ``jitter_ms``) each way."""

    name = "s3_delay"
    doc = "delay the job's link to the object store by ms each way (Toxiproxy), for duration seconds"
    args: ClassVar[Mapping[str, str]] = {"ms": "the delay each way, in milliseconds", "jitter_ms": "± uniform jitter"}
    required = ("ms",)

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        params["ms"] = number(cls.name, "ms", params["ms"], strict=True)
        params["jitter_ms"] = number(cls.name, "jitter_ms", params.get("jitter_ms", 0.0))

    def _toxic(self, params: Mapping[str, Any], link: ToxiproxyLink) -> ToxicFault:
        return link.slow(float(params["ms"]), float(params.get("jitter_ms", 0.0)))

    def confirm(self, planned: PlannedFault, handle: tuple[ToxicFault, int]) -> dict[str, object]:
        """The added round trip, measured: through the job's way in, against the store's own port."""
        store = self._store()
        ms = float(planned.spec.params["ms"])
        _, direct = probe(store.endpoint)
        outcome, through = probe(store.job_endpoint, timeout=2 * ms / 1000 + PROBE_S)
        added = (through - direct) * 1000
        if outcome != "reply" or (ms >= 5 and added < ms):
            raise RuntimeError(f"@{self.name} is not in effect: a request through the job's way in took "
                               f"{through * 1000:.0f} ms ({outcome}), directly {direct * 1000:.0f} ms")
        return {"store": "delayed", "measured_rtt_added_ms": round(added, 1), "scope": "job",
                "mechanism": "toxiproxy"}


class S3Partition(_OnLink):
    """The job's link to the store cut: ``blackhole`` (bytes vanish, connections stay open) or ``refuse``."""

    name = "s3_partition"
    doc = ("cut the job's link to the object store (Toxiproxy; mode='blackhole' default, or 'refuse') for duration "
           "seconds")
    args: ClassVar[Mapping[str, str]] = {"mode": "'blackhole' (default) or 'refuse'"}

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        mode = params.setdefault("mode", "blackhole")
        if mode not in ToxicPartition.MODES:
            modes = ", ".join(map(repr, ToxicPartition.MODES))
            raise FaultSpecError(f"@{cls.name}: mode={mode!r} must be one of {modes}")

    def _toxic(self, params: Mapping[str, Any], link: ToxiproxyLink) -> ToxicFault:
        return link.partition(str(params.get("mode", "blackhole")))

    def confirm(self, planned: PlannedFault, handle: tuple[ToxicFault, int]) -> dict[str, object]:
        """A request through the job's way in gets no answer (the store's own port still answers)."""
        store = self._store()
        outcome, _ = probe(store.job_endpoint, timeout=1.0)
        if outcome == "reply":
            raise RuntimeError(f"@{self.name} is not in effect: a request through the job's way in was answered")
        return {"store": "cut", "probe": outcome, "store_answers": probe(store.endpoint)[0] == "reply",
                "scope": "job", "mechanism": "toxiproxy"}


class S3Errors(_OnStore[tuple[RefusalRule, int]]):
    """A share of the job's requests of some operations refused with an HTTP error by the store's proxy."""

    name = "s3_errors"
    doc = ("answer rate (default 0.3) of the job's S3 requests of ops (default ['PUT']; PUT, COPY, GET, HEAD, LIST, "
           "DELETE, MULTIPART) with HTTP status (default 503 SlowDown) for duration seconds; what S3A retried is "
           "counted")
    args: ClassVar[Mapping[str, str]] = {
        "status": "the HTTP status (default 503; S3's error code follows it: 503 SlowDown, 500 InternalError)",
        "ops": "the S3 operations refused (default ['PUT'])", "rate": "the share refused, in (0, 1] (default 0.3)",
        "code": "S3's error code, when not the status's own"}

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        status = params.setdefault("status", 503)
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise FaultSpecError(f"@{cls.name}: status={status!r} must be an HTTP error status (400-599), e.g. 503")
        ops = params.setdefault("ops", ["PUT"])
        ops = [ops] if isinstance(ops, str) else list(ops)
        unknown = [o for o in ops if o not in OPS]
        if unknown or not ops:
            raise FaultSpecError(f"@{cls.name}: ops={ops!r}: the S3 operations are {', '.join(OPS)}")
        params["ops"] = ops
        rate = number(cls.name, "rate", params.setdefault("rate", 0.3), strict=True)
        if rate > 1:
            raise FaultSpecError(f"@{cls.name}: rate={rate!r} must be in (0, 1]")

    def inject(self, planned: PlannedFault) -> tuple[RefusalRule, int]:
        p = planned.spec.params
        since = self._log_size()
        return self._store().refuse(int(p["status"]), list(p["ops"]), float(p["rate"]), str(p.get("code", "")),
                                    seed=self.ctx.draws(planned.occurrence)), since

    def confirm(self, planned: PlannedFault, handle: tuple[RefusalRule, int]) -> dict[str, object]:
        p = planned.spec.params
        return {"store": "refusing", "status": p["status"], "ops": list(p["ops"]), "rate": p["rate"], "scope": "job"}

    def heal(self, planned: PlannedFault, handle: tuple[RefusalRule, int]) -> None:
        rule, since = handle
        self._store().allow(rule)
        if self.ctx.recorder is not None:
            self.ctx.recorder.record(S3Kind.S3_REQUESTS_REFUSED, planned.label, **rule.summary())
        self._logged(planned, since)


KINDS = (KillS3, S3Delay, S3Partition, S3Errors)
