"""Which failure-detection timeout governs a link, and PGVal's delay classes (PD<TO, PD>TO).

A packet delay below the timeout of its link only slows the system (PD<TO); above it the system
declares the peer dead (PD>TO). A ``network_delay(..., above_timeout=...)`` states which class the
test means; :func:`check_delay_class` checks that against the stack's *effective* settings and says
which setting to change when the statement does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


class DelayClassError(ValueError):
    """The stated delay class does not hold for the effective timeout. Names the setting."""


@dataclass(frozen=True)
class GoverningTimeout:
    setting: str  #: the configuration key, e.g. ``spark.network.timeout``
    seconds: float  #: its effective value
    where: str  #: where it is set, for the message


def spark_seconds(value: str | float | int) -> float:
    """Parse a Spark duration (``"20s"``, ``"500ms"``, ``"2min"``, ``"120"`` = seconds)."""
    if isinstance(value, (int, float)):
        return float(value)
    v = value.strip().lower()
    for suffix, mult in (("ms", 0.001), ("min", 60.0), ("m", 60.0), ("s", 1.0), ("h", 3600.0)):
        if v.endswith(suffix):
            return float(v[: -len(suffix)]) * mult
    return float(v)


def governing_timeout(target: str, cluster_conf: Mapping[str, str], job_conf: Mapping[str, str],
                      kafka_timeout_ms: float) -> GoverningTimeout:
    """The timeout that decides when the peer behind ``target`` is declared dead
    (docs/architecture.md#network-delay-classes).

    - ``worker-<i>`` / ``master``: the master drops a worker after ``spark.worker.timeout`` without
      a heartbeat (cluster setting).
    - ``driver``: the driver drops an executor after ``spark.network.timeout`` without a heartbeat
      (job setting; heartbeats every ``spark.executor.heartbeatInterval``).
    - ``kafka`` / ``broker-<i>``: the job's Kafka reads give up after the source's poll timeout.
    """
    base = target.split("-")[0]
    if base in ("worker", "master", "zookeeper"):
        return GoverningTimeout("spark.worker.timeout", spark_seconds(cluster_conf.get("spark.worker.timeout", "60")),
                                "the cluster (LocalSparkCluster worker_timeout_s)")
    if base == "driver":
        return GoverningTimeout("spark.network.timeout", spark_seconds(job_conf.get("spark.network.timeout", "120s")),
                                "the job's Spark conf (chaos.run(conf={...}))")
    return GoverningTimeout("pollTimeoutMs", kafka_timeout_ms / 1000.0,
                            "the job's Kafka source option (chaos.run(kafka_timeout_ms=...))")


def check_delay_class(ms: float, above_timeout: bool | None, timeout: GoverningTimeout, target: str) -> None:
    """Raise :class:`DelayClassError` when ``ms`` is not on the stated side of the timeout."""
    if above_timeout is None:
        return
    to_ms = timeout.seconds * 1000.0
    if above_timeout and ms <= to_ms:
        raise DelayClassError(
            f"network_delay(ms={ms:g}, target={target!r}, above_timeout=True) is not PD>TO: the link's "
            f"failure-detection timeout {timeout.setting} is {to_ms:g} ms (set by {timeout.where}); "
            f"use ms > {to_ms:g} or lower {timeout.setting}")
    if not above_timeout and ms >= to_ms:
        raise DelayClassError(
            f"network_delay(ms={ms:g}, target={target!r}, above_timeout=False) is not PD<TO: the link's "
            f"failure-detection timeout {timeout.setting} is {to_ms:g} ms (set by {timeout.where}); "
            f"use ms < {to_ms:g} or raise {timeout.setting}")
