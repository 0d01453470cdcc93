"""Which failure-detection timeout governs a link, and PGVal's delay classes (PD<TO, PD>TO).

A packet delay below the timeout of its link only slows the system (PD<TO); above it the system
declares the peer dead (PD>TO). A ``network_delay(..., above_timeout=...)`` states which class the
test means; :func:`check_delay_class` checks that against the stack's *effective* settings and says
which setting to change when the statement does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_streamchaos.facts import DelayClassChoice  # what the run set: a fact of its history


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
                      job_kafka: Mapping[str, tuple[str, str]] | None = None) -> GoverningTimeout:
    """The timeout that decides when the peer behind ``target`` is declared dead
    (docs/architecture.md#network-delay-classes).

    - ``worker-<i>`` / ``master``: the master drops a worker after ``spark.worker.timeout`` without
      a heartbeat (cluster setting).
    - ``driver``: the driver drops an executor after ``spark.network.timeout`` without a heartbeat
      (job setting; heartbeats every ``spark.executor.heartbeatInterval``).
    - ``kafka`` / ``broker-<i>``: the job's Kafka clients (Spark's connector: the driver's admin client
      that plans each micro-batch's offsets, the executors' consumers and producers) give up on a
      request after ``request.timeout.ms``: kafka-clients' 30000 ms unless the job's code sets
      ``kafka.request.timeout.ms`` (``job_kafka``: the options read from its source, value and place).
      The driver plans every batch first, so a delay below this stalls the job without an error.
    """
    base = target.split("-")[0]
    if base in ("worker", "master", "zookeeper"):
        return GoverningTimeout("spark.worker.timeout", spark_seconds(cluster_conf.get("spark.worker.timeout", "60")),
                                "the cluster (LocalSparkCluster worker_timeout_s)")
    if base == "driver":
        return GoverningTimeout(NETWORK_TIMEOUT, spark_seconds(job_conf.get(NETWORK_TIMEOUT, "120s")),
                                "the job's Spark conf (chaos.run(..., setup=JobSetup(conf={...})))")
    value, where = (job_kafka or {}).get(KAFKA_REQUEST_TIMEOUT, (str(KAFKA_REQUEST_TIMEOUT_DEFAULT_MS), ""))
    return GoverningTimeout(KAFKA_REQUEST_TIMEOUT, float(value) / 1000.0,
                            f"the job's code ({where})" if where else "kafka-clients' default, which the job's code "
                            f"changes with .option({KAFKA_REQUEST_TIMEOUT!r}, ...)")


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


#: job settings the plugin may change for one run to make a stated delay class hold
NETWORK_TIMEOUT = "spark.network.timeout"
HEARTBEAT = "spark.executor.heartbeatInterval"
TIMEOUT_INTERVAL = "spark.network.timeoutInterval"
#: the Kafka clients' request timeout, a Kafka option of the job (only its code sets it)
KAFKA_REQUEST_TIMEOUT = "kafka.request.timeout.ms"
KAFKA_REQUEST_TIMEOUT_DEFAULT_MS = 30_000


def resolve_delay_class(target: str, ms: float, above_timeout: bool | None, cluster_conf: Mapping[str, str],
                        job_conf: Mapping[str, str], pinned: frozenset[str] = frozenset(),
                        job_kafka: Mapping[str, tuple[str, str]] | None = None) -> DelayClassChoice | None:
    """The settings that make ``network_delay(ms=ms, target=target, above_timeout=...)`` hold, or
    None when it holds already (or no class is stated).

    PD>TO sets the governing timeout to about half the delay, PD<TO to twice the delay: far enough
    from it that jitter and the heartbeat period do not blur the class. ``pinned`` names settings the
    test fixed itself (``conf=`` keys): the plugin does not override a test, so
    a contradiction with one raises :class:`DelayClassError` naming it, as does a cluster-wide
    setting (``spark.worker.timeout``), which one run cannot change."""
    to = governing_timeout(target, cluster_conf, job_conf, job_kafka)
    try:
        check_delay_class(ms, above_timeout, to, target)
        return None
    except DelayClassError as exc:
        reason = str(exc)
    if above_timeout is None:  # pragma: no cover - check_delay_class never raises then
        return None
    base = target.split("-")[0]
    if base == "driver":
        return _resolve_network(target, ms, above_timeout, job_conf, pinned, reason)
    if base in ("kafka", "broker"):
        raise DelayClassError(f"{reason}. It is an option of the job's Kafka clients, which only the job's code sets: "
                              f"set .option({KAFKA_REQUEST_TIMEOUT!r}, ...) on its Kafka reader and writer, or change "
                              "the delay")
    raise DelayClassError(f"{reason}. {to.setting} is a cluster-wide setting that one run cannot change: start the "
                          "cluster with another spark.worker.timeout or change the delay")


def _resolve_network(target: str, ms: float, above: bool, job_conf: Mapping[str, str], pinned: frozenset[str],
                     reason: str) -> DelayClassChoice:
    """``spark.network.timeout`` for this run: the driver's executor-liveness timeout."""
    if NETWORK_TIMEOUT in pinned:
        raise DelayClassError(f"{reason}. The test pins it (JobSetup(conf={{{NETWORK_TIMEOUT!r}: "
                              f"{job_conf.get(NETWORK_TIMEOUT)!r}}})): drop it to let the plugin choose, or change it")
    before = job_conf.get(NETWORK_TIMEOUT, "120s")
    # Spark reads spark.network.timeout in whole seconds: "0.5s" would be 0, i.e. no timeout at all
    secs = int(ms // 2000) if above else int(max(spark_seconds(before), -(-2 * ms // 1000)))
    if secs < 1 or (above and secs * 1000 >= ms):
        raise DelayClassError(f"{reason}. {NETWORK_TIMEOUT} is read in whole seconds (at least 1 s), so no value "
                              f"lies below {ms:g} ms with room for a heartbeat: use ms >= 2000")
    conf = {NETWORK_TIMEOUT: f"{secs}s"}
    # Spark refuses a heartbeat interval >= the timeout, and checks for expired heartbeats only every
    # spark.network.timeoutInterval: both follow the timeout so the class shows within the fault
    beat_ms = secs * 1000 // 4
    if spark_seconds(job_conf.get(HEARTBEAT, "10s")) * 1000 >= secs * 1000:
        if HEARTBEAT in pinned:
            raise DelayClassError(f"{reason}; {NETWORK_TIMEOUT}={secs}s would need {HEARTBEAT} below it, but the "
                                  f"test pins {HEARTBEAT}={job_conf.get(HEARTBEAT)}")
        conf[HEARTBEAT] = f"{beat_ms}ms"
    if above and spark_seconds(job_conf.get(TIMEOUT_INTERVAL, "60s")) > secs and TIMEOUT_INTERVAL not in pinned:
        conf[TIMEOUT_INTERVAL] = f"{secs}s"
    return DelayClassChoice(target, ms, above, NETWORK_TIMEOUT, before, f"{secs}s", conf)
