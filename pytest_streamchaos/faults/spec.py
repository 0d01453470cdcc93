"""Fault specifications: what a fault mark says, checked when the test is collected.

A mark such as ``@kill_worker(after=30, restart_after=10)`` becomes a :class:`FaultSpec`. Every
argument is validated here, so a typo fails at collection time with a message naming the mark, the
argument and the allowed values -- not half-way through a two-minute chaos run.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

#: arguments every fault mark accepts.
COMMON_ARGS = {
    "after": "seconds from steady state until the fault is injected (default 0; an aimed fault, when=, "
             "arms after AIMED_ARM_AFTER = 5 s of baseline unless after= is given)",
    "duration": "seconds until the fault is healed (resume, rule removed, broker up)",
    "every": "repeat the fault every N seconds (with times)",
    "times": "how many occurrences (default 1; with every)",
    "index": "which instance: an int position, or a role (see each fault)",
    "when": "fire at a moment instead of a clock time (see each fault)",
    "timeout": "seconds to wait for an aimed moment before giving up (default 60)",
}

KILL_ARGS = {
    "restart_after": "seconds after the kill to restart the process (None: leave it dead / Spark's own restart)",
    "signal": "SIGKILL (default) or SIGTERM",
}

#: Default ``after`` of an aimed fault (``when=`` without ``after=``): it arms only once the load
#: phase has run this long, so the metrics have a baseline to measure recovery against (their
#: minimum is ``max(bucket_seconds, hold_seconds)`` = 5 s with the default MetricParams). An aimed
#: fault that fired right after warm-up would leave recovery time and failure cost unmeasurable.
AIMED_ARM_AFTER = 5.0

#: which broker a broker fault hits: a role of a partition of the job's topics, or a broker id
BROKER_ROLES = ("leader", "follower", "controller", "all")
BROKER_ARGS = {
    "topic": "whose partition's 'leader' / 'follower' is meant: 'input' (default) or 'output'",
    "partition": "that partition (default 0)",
}

NET_TARGETS = "a component or a link: 'kafka', 'broker-<i>', 'master', 'worker-<i>', 'driver'"
#: docker backend: faults act in the job's nodes' namespaces; ``on`` picks one of them
ON_NODE = "docker backend: the one node whose side of the link is hit, e.g. 'worker-0' (default: every worker)"


@dataclass(frozen=True)
class FaultKind:
    """The schema of one fault mark."""

    name: str
    doc: str
    args: dict[str, str]
    required: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()  #: allowed string values of ``index``
    moments: tuple[str, ...] = ()  #: allowed values of ``when``
    network: bool = False


#: faults on the run's HDFS (``chaos.run(..., checkpoint="hdfs")``), acted by faults/actions.py's Hdfs* classes
HDFS_KINDS = (
    FaultKind("kill_namenode", "kill the HDFS NameNode; restart it (same ports, same name dir) after "
              "restart_after (default 0: at once)", KILL_ARGS),
    FaultKind("pause_namenode", "SIGSTOP the HDFS NameNode for duration seconds (SIGCONT on heal)", {}),
    FaultKind("kill_datanode", "kill HDFS DataNode index= (an int, default 0); restart it after restart_after, "
              "or leave it dead", KILL_ARGS),
)

KINDS: dict[str, FaultKind] = {
    k.name: k
    for k in (
        FaultKind("kill_worker", "kill a Spark worker and its executors (process group)", KILL_ARGS,
                  roles=("busiest",), moments=("tasks_running",)),
        FaultKind("kill_executor", "kill one executor JVM (its worker stays)", KILL_ARGS,
                  roles=("busiest",), moments=("tasks_running",)),
        FaultKind("kill_driver", "kill the driver (JVM and Python children); restart it from the checkpoint "
                  "after restart_after (default 0)",
                  KILL_ARGS, moments=("uncommitted_output",)),
        FaultKind("kill_master", "kill a Spark master (the active one by default)", KILL_ARGS,
                  roles=("active", "standby")),
        FaultKind("kill_broker", "kill a Kafka broker's JVM (SIGKILL: a lost machine) and start it again after "
                  "restart_after/duration; index: 'leader' (default) of a partition of the job's input (or "
                  "output: topic='output'), 'follower', 'controller' (the active KRaft controller), 'all', "
                  "or a broker id", {**KILL_ARGS, **BROKER_ARGS}, roles=BROKER_ROLES),
        FaultKind("pause", "SIGSTOP a target's process group (container pause), SIGCONT on heal",
                  {"target": "'worker', 'executor', 'driver', 'master' or 'broker'", **BROKER_ARGS},
                  required=("target",), roles=("busiest", "active", *BROKER_ROLES)),
        FaultKind("isolate_broker", "cut a Kafka broker from the other brokers (replication and the KRaft "
                  "quorum) while clients still reach it, for duration", BROKER_ARGS, roles=BROKER_ROLES),
        FaultKind("network_delay", "delay packets on a link",
                  {"ms": "added one-way delay in ms", "jitter_ms": "uniform jitter in ms (default 0)",
                   "target": NET_TARGETS, "on": ON_NODE,
                   "above_timeout": "True: PD>TO (peer declared dead); False: PD<TO (only slower)"},
                  required=("ms",), network=True),
        FaultKind("packet_loss", "drop a percentage of packets on a link",
                  {"percent": "0 < percent <= 100", "target": NET_TARGETS, "on": ON_NODE}, required=("percent",),
                  network=True),
        FaultKind("network_partition", "cut a link (both directions)", {"target": NET_TARGETS, "on": ON_NODE},
                  network=True),
        FaultKind("bandwidth_limit", "limit a link's bandwidth",
                  {"kbit": "kilobits per second", "target": NET_TARGETS}, required=("kbit",), network=True),
        FaultKind("poison_records", "send malformed records through the generator",
                  {"count": "how many poison records (default 1)"}),
        *HDFS_KINDS,
    )
}


class FaultSpecError(ValueError):
    """A fault mark has a wrong argument. The message names the mark, the argument and the fix."""


@dataclass(frozen=True)
class FaultSpec:
    """One fault mark, validated. ``params`` holds the kind-specific arguments."""

    kind: str
    after: float = 0.0
    duration: float | None = None
    every: float | None = None
    times: int = 1
    index: int | str | None = None
    when: str | None = None
    timeout: float = 60.0
    restart_after: float | None = None
    target: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Short human label for tables and timelines, e.g. ``kill_worker[0]@30s``."""
        where = self.target or ("" if self.index is None else str(self.index))
        at = f" when={self.when}" if self.when else f"@{self.after:g}s"
        rep = f" x{self.times}/{self.every:g}s" if self.every else ""
        extra = "".join(f" {k}={v}" for k, v in self.params.items() if k != "signal")
        return f"{self.kind}{f'[{where}]' if where else ''}{at}{rep}{extra}"

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if v not in (None, {}) and k != "params"}
        d.update(self.params)
        return d


def _num(kind: str, name: str, value: Any, *, minimum: float = 0.0, strict: bool = False,
         integer: bool = False) -> float:
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type:
        what = "an int" if integer else "a number"
        raise FaultSpecError(f"@{kind}: {name}={value!r} must be {what} ({COMMON_ARGS.get(name, '')})".rstrip(" ()"))
    if value < minimum or (strict and value == minimum):
        cmp = ">" if strict else ">="
        raise FaultSpecError(f"@{kind}: {name}={value!r} must be {cmp} {minimum:g}")
    return value


def parse(kind: str, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> FaultSpec:
    """Validate one fault mark's arguments and return its :class:`FaultSpec`.

    Raises :class:`FaultSpecError` with a message that names the mark, the argument and the allowed
    values (with a did-you-mean for misspelt argument names).
    """
    kwargs = dict(kwargs or {})
    fk = KINDS.get(kind)
    if fk is None:
        raise FaultSpecError(f"unknown fault {kind!r}; known faults: {', '.join(sorted(KINDS))}")
    if args:
        raise FaultSpecError(f"@{kind} takes keyword arguments only, e.g. @{kind}(after=30); got {args!r}")
    allowed = _check_names(kind, fk, kwargs)
    after_given = "after" in kwargs
    after, duration, every, times = _schedule(kind, kwargs)
    index = _index(kind, fk, kwargs.pop("index", None))
    when = kwargs.pop("when", None)
    if when is not None:
        _check_when(kind, fk, when, every)
        if not after_given:
            after = AIMED_ARM_AFTER
    timeout = _num(kind, "timeout", kwargs.pop("timeout", 60.0), strict=True)
    restart_after = kwargs.pop("restart_after", None)
    if restart_after is not None:
        restart_after = _num(kind, "restart_after", restart_after)
        if duration is not None:
            raise FaultSpecError(f"@{kind}: give restart_after or duration, not both (both mean 'heal after')")
    if kind in ("kill_driver", "kill_namenode") and restart_after is None and duration is None:
        # like --supervise: a killed driver comes back (from the same checkpoint); a NameNode too
        restart_after = 0.0
    target = _target(kind, fk, kwargs, allowed)
    _check_kind_params(kind, kwargs)
    return FaultSpec(kind=kind, after=float(after), duration=duration, every=every, times=times, index=index,
                     when=when, timeout=float(timeout), restart_after=restart_after, target=target,
                     params=kwargs)


def _check_names(kind: str, fk: FaultKind, kwargs: dict[str, Any]) -> dict[str, str]:
    """Every argument known (did-you-mean otherwise), every required one given; the allowed ones."""
    allowed = {**COMMON_ARGS, **fk.args}
    for name in kwargs:
        if name not in allowed:
            close = difflib.get_close_matches(name, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise FaultSpecError(f"@{kind}: unknown argument {name!r}{hint}; allowed: {', '.join(sorted(allowed))}")
    for name in fk.required:
        if name not in kwargs:
            raise FaultSpecError(f"@{kind}: missing required argument {name!r} ({allowed[name]})")
    return allowed


def _schedule(kind: str, kwargs: dict[str, Any]) -> tuple[float, float | None, float | None, int]:
    """Pops and checks ``after``, ``duration``, ``every``, ``times``."""
    after = _num(kind, "after", kwargs.pop("after", 0.0))
    duration = kwargs.pop("duration", None)
    if duration is not None:
        duration = _num(kind, "duration", duration, strict=True)
    every = kwargs.pop("every", None)
    times = kwargs.pop("times", None)
    if every is not None:
        every = _num(kind, "every", every, strict=True)
        times = 2 if times is None else int(_num(kind, "times", times, minimum=1, integer=True))
    elif times is not None and times != 1:
        raise FaultSpecError(f"@{kind}: times={times!r} needs every=<seconds between occurrences>")
    else:
        times = 1
    if every is not None and duration is not None and duration >= every:
        raise FaultSpecError(f"@{kind}: duration={duration:g} must be shorter than every={every:g}")
    return after, duration, every, times


def _index(kind: str, fk: FaultKind, index: Any) -> int | str | None:
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, (int, str)):
            raise FaultSpecError(f"@{kind}: index={index!r} must be an int position or a role")
        if isinstance(index, int) and index < 0:
            raise FaultSpecError(f"@{kind}: index={index!r} must be >= 0")
        if isinstance(index, str) and index not in fk.roles:
            roles = ", ".join(repr(r) for r in fk.roles) or "none (use an int position)"
            raise FaultSpecError(f"@{kind}: index={index!r} is not a role of this fault; roles: {roles}")
    return index


def _check_when(kind: str, fk: FaultKind, when: Any, every: float | None) -> None:
    if when not in fk.moments:
        moments = ", ".join(repr(m) for m in fk.moments) or "none"
        raise FaultSpecError(f"@{kind}: when={when!r} is not a moment this fault can aim at; moments: {moments}")
    if every is not None:
        raise FaultSpecError(f"@{kind}: when= and every= cannot be combined")


def _target(kind: str, fk: FaultKind, kwargs: dict[str, Any], allowed: dict[str, str]) -> str | None:
    """Checks ``signal`` and pops ``target`` (network faults default to ``kafka``)."""
    signal = kwargs.get("signal")
    if signal is not None and signal not in ("SIGKILL", "SIGTERM"):
        raise FaultSpecError(f"@{kind}: signal={signal!r} must be 'SIGKILL' or 'SIGTERM'")
    target = kwargs.pop("target", None)
    if target is not None and not isinstance(target, str):
        raise FaultSpecError(f"@{kind}: target={target!r} must be a string ({allowed['target']})")
    if kind == "pause" and target not in ("worker", "executor", "driver", "master", "broker"):
        raise FaultSpecError(f"@pause: target={target!r} must be one of 'worker', 'executor', 'driver', "
                             "'master', 'broker'")
    if fk.network:
        target = target or "kafka"
        _check_net_target(kind, target)
    return target


def _check_kind_params(kind: str, kwargs: dict[str, Any]) -> None:
    """The arguments of one kind (``ms``, ``percent``, ``kbit``, ``count``); fills defaults in."""
    if kind == "network_delay":
        _num(kind, "ms", kwargs["ms"], strict=True)
        _num(kind, "jitter_ms", kwargs.setdefault("jitter_ms", 0))
        above = kwargs.get("above_timeout")
        if above is not None and not isinstance(above, bool):
            raise FaultSpecError(f"@network_delay: above_timeout={above!r} must be True or False")
    if kind == "packet_loss":
        pct = _num(kind, "percent", kwargs["percent"], strict=True)
        if pct > 100:
            raise FaultSpecError(f"@packet_loss: percent={pct!r} must be at most 100")
    if kind == "bandwidth_limit":
        _num(kind, "kbit", kwargs["kbit"], strict=True)
    if "topic" in kwargs and kwargs["topic"] not in ("input", "output"):
        raise FaultSpecError(f"@{kind}: topic={kwargs['topic']!r} must be 'input' or 'output'")
    if "partition" in kwargs:
        _num(kind, "partition", kwargs["partition"], integer=True)
    if kind == "poison_records":
        kwargs["count"] = int(_num(kind, "count", kwargs.get("count", 1), minimum=1, integer=True))


def _check_net_target(kind: str, target: str) -> None:
    base, _, idx = target.partition("-")
    if base not in ("kafka", "broker", "master", "worker", "driver", "zookeeper") or (idx and not idx.isdigit()):
        raise FaultSpecError(f"@{kind}: target={target!r} is not a link; use {NET_TARGETS}")
