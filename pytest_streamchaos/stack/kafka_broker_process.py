"""The embedded Kafka cluster's helper process: a librdkafka mock cluster behind a JSON-line pipe.

Run as ``python -m pytest_streamchaos.stack.kafka_broker_process --brokers N``. It

1. creates a mock cluster of N brokers (listeners on 127.0.0.1, ephemeral ports),
2. prints one ready line on stdout: ``{"event": "ready", "bootstrap_servers": ..., "broker_ids": [...],
   "ports": {"1": port, ...}, "pid": ...}``,
3. serves one JSON command per stdin line with one JSON reply per stdout line:
   ``{"id": 7, "op": "broker_down", "broker": 2}`` -> ``{"id": 7, "ok": true, "result": ...}`` or
   ``{"id": 7, "ok": false, "error": "..."}``.

Ops: ``ping``, ``create_topic(name, partitions, replication)``, ``broker_down(broker)``,
``broker_up(broker)``, ``set_rtt(broker, ms)``, ``set_leader(topic, partition, broker)``,
``set_coordinator(key_type, key, broker)``, ``push_request_errors(api_key, errors)``, ``heal``,
``status`` (alias ``metadata``), ``shutdown``.

A bad command gets an error reply; it never kills the helper. stdin EOF means the owner is gone
(also when it was SIGKILLed: the kernel closes its end of the pipe), so the helper exits at once.
Diagnostics go to stderr (the owner points it at a log file), never to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from pytest_streamchaos.stack.kafka_mock import MockCluster


class BrokerState:
    """The mock cluster plus what the owner asked of it (the C API has no getters)."""

    def __init__(self, brokers: int, group_rebalance_delay_ms: int | None = None,
                 advertise: tuple[str, int] | None = None) -> None:
        self.cluster = MockCluster(brokers)
        self.advertised: dict[int, tuple[str, int]] = {}
        self._forwarders: list = []
        if advertise is not None:
            self._advertise(*advertise)
        if group_rebalance_delay_ms is not None:
            self.cluster.set_group_initial_rebalance_delay(group_rebalance_delay_ms)
        self.down: set[int] = set()
        self.rtt: dict[int, int] = {b: 0 for b in self.cluster.broker_ids}
        self.topics: dict[str, dict[str, int]] = {}
        self.error_apis: set[int] = set()  # ApiKeys with injected errors (possibly still pending)

    def _advertise(self, host: str, base_port: int) -> None:
        """Broker ``b`` answers on ``host:base_port+b`` (all interfaces of this container) and says so in
        metadata. The mock's listeners bind 127.0.0.1 only; a forwarder takes each one outside."""
        from pytest_streamchaos.stack.tcpproxy import TcpProxy

        hosts = self.cluster.bootstrap_servers.split(",")
        for b, h in zip(self.cluster.broker_ids, hosts, strict=True):
            port = base_port + b
            self._forwarders.append(TcpProxy(upstream_port=int(h.rsplit(":", 1)[1]), listen_port=port,
                                             listen_host="0.0.0.0"))  # noqa: S104 - a container's own namespace
            self.cluster.broker_set_host_port(b, host, port)
            self.advertised[b] = (host, port)

    @property
    def bootstrap_servers(self) -> str:
        if self.advertised:
            return ",".join(f"{h}:{p}" for h, p in self.advertised.values())
        return self.cluster.bootstrap_servers

    def ports(self) -> dict[str, int]:
        """Broker id (as a JSON key) -> the port clients reach it at; librdkafka lists brokers in id order."""
        hosts = self.bootstrap_servers.split(",")
        return {str(b): int(h.rsplit(":", 1)[1]) for b, h in zip(self.cluster.broker_ids, hosts, strict=True)}

    def ready(self) -> dict[str, Any]:
        return {"event": "ready", "bootstrap_servers": self.bootstrap_servers,
                "broker_ids": self.cluster.broker_ids, "ports": self.ports(), "pid": os.getpid()}

    def status(self) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap_servers, "broker_ids": self.cluster.broker_ids,
                "ports": self.ports(), "down": sorted(self.down),
                "rtt_ms": {str(b): ms for b, ms in self.rtt.items()}, "topics": self.topics,
                "pid": os.getpid()}

    def heal(self) -> dict[str, Any]:
        """All brokers up, no delays, no pending injected errors; touch only what differs (a set_up
        on a healthy broker is not needed, and a healed cluster should see no churn)."""
        mc = self.cluster
        healed: dict[str, Any] = {"up": sorted(self.down), "rtt_cleared": [], "errors_cleared": []}
        for b in sorted(self.down):
            mc.broker_set_up(b)
        self.down.clear()
        for b, ms in self.rtt.items():
            if ms:
                mc.broker_set_rtt(b, 0)
                self.rtt[b] = 0
                healed["rtt_cleared"].append(b)
        for api_key in sorted(self.error_apis):
            mc.clear_request_errors(api_key)
            healed["errors_cleared"].append(api_key)
        self.error_apis.clear()
        return healed

    def handle(self, op: str, args: dict[str, Any]) -> Any:
        """Run one command; raise on bad input (the caller turns it into an error reply)."""
        mc = self.cluster
        if op == "ping":
            return "pong"
        if op in ("status", "metadata"):
            return self.status()
        if op == "create_topic":
            name = str(args["name"])
            partitions = int(args.get("partitions", 1))
            replication = int(args.get("replication", 1))
            if name in self.topics:
                raise ValueError(f"topic {name!r} already exists")
            mc.topic_create(name, partitions, replication)
            self.topics[name] = {"partitions": partitions, "replication": replication}
            return name
        if op == "broker_down":
            broker = int(args["broker"])
            mc.broker_set_down(broker)
            self.down.update(mc.broker_ids if broker == -1 else [broker])
            return None
        if op == "broker_up":
            broker = int(args["broker"])
            mc.broker_set_up(broker)
            self.down.difference_update(mc.broker_ids if broker == -1 else [broker])
            return None
        if op == "set_rtt":
            broker, ms = int(args["broker"]), int(args["ms"])
            mc.broker_set_rtt(broker, ms)
            for b in mc.broker_ids if broker == -1 else [broker]:
                self.rtt[b] = ms
            return None
        if op == "set_leader":
            mc.partition_set_leader(str(args["topic"]), int(args["partition"]), int(args["broker"]))
            return None
        if op == "set_coordinator":
            mc.coordinator_set(str(args["key_type"]), str(args["key"]), int(args["broker"]))
            return None
        if op == "push_request_errors":
            api_key = int(args["api_key"])
            mc.push_request_errors(api_key, [int(e) for e in args["errors"]])
            self.error_apis.add(api_key)
            return None
        if op == "heal":
            return self.heal()
        raise ValueError(f"unknown op {op!r}")


def _reply(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def serve(state: BrokerState, stdin=None) -> None:
    """Answer commands until ``shutdown`` or stdin EOF."""
    stdin = stdin or sys.stdin
    for line in stdin:
        line = line.strip()
        if not line:
            continue
        req_id = None
        try:
            req = json.loads(line)
            if not isinstance(req, dict) or "op" not in req:
                raise ValueError("a command is a JSON object with an 'op' key")
            req_id = req.get("id")
            op = req["op"]
            if op == "shutdown":
                _reply({"id": req_id, "ok": True, "result": None})
                return
            result = state.handle(op, req)
            _reply({"id": req_id, "ok": True, "result": result})
        except KeyError as exc:
            _reply({"id": req_id, "ok": False, "error": f"missing argument {exc} for this op"})
        except Exception as exc:  # any bad command is the caller's problem, not a reason to die
            _reply({"id": req_id, "ok": False, "error": f"{type(exc).__name__}: {exc}"})
    # EOF: the owner is gone.


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=3, help="number of brokers (ids 1..N)")
    parser.add_argument("--group-rebalance-delay-ms", type=int, default=None,
                        help="group.initial.rebalance.delay.ms of the brokers (default: librdkafka's, 3000)")
    parser.add_argument("--advertise", default=None, metavar="HOST:BASEPORT",
                        help="answer on all interfaces at BASEPORT+id and advertise HOST (in a container)")
    ns = parser.parse_args(argv)
    advertise = None
    if ns.advertise:
        host, _, base = ns.advertise.rpartition(":")
        advertise = (host, int(base))
    try:
        state = BrokerState(ns.brokers, ns.group_rebalance_delay_ms, advertise)
    except Exception as exc:
        # One line on stdout so the owner can show the cause instead of waiting for a timeout.
        _reply({"event": "error", "error": f"{type(exc).__name__}: {exc}"})
        print(f"kafka_broker_process: cannot start: {exc}", file=sys.stderr)
        return 2
    print(f"kafka_broker_process pid={os.getpid()} brokers={state.bootstrap_servers}",
          file=sys.stderr, flush=True)
    _reply(state.ready())
    try:
        serve(state)
    except BrokenPipeError:
        pass  # the owner closed our stdout: it is gone, same as stdin EOF
    finally:
        state.cluster.destroy()
    print("kafka_broker_process: exiting", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
