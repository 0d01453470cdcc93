"""The local embedded Kafka cluster: librdkafka's mock cluster in a helper process the plugin owns.

The helper (:mod:`.kafka_broker_process`) holds the brokers; this module starts it in its own process
group, talks to it over its stdin/stdout (one JSON line each way) and exposes the
:class:`~pytest_streamchaos.stack.base.KafkaCluster` interface plus a few extra fault controls.

Lifetime: the helper is registered with the reaper (killed if pytest dies) and also exits by itself
when its stdin closes, i.e. when this process is gone, however it went.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import Endpoint, KafkaCluster, StackError
from pytest_streamchaos.stack.kafka_mock import API_KEYS  # loads no library
from pytest_streamchaos.stack.process import ManagedProcess

_HELPER_MODULE = "pytest_streamchaos.stack.kafka_broker_process"
_PKG_PARENT = str(Path(__file__).resolve().parents[2])

class _HelperProcess(ManagedProcess):
    """The helper: a :class:`~.process.ManagedProcess` in pipe mode - JSON lines on stdin/stdout, the
    pipe its lifeline (it exits on EOF), stderr to the log."""

    def __init__(self, argv: Sequence[str], log_path: Path, env: dict[str, str]) -> None:
        super().__init__(argv, env=env, log_path=log_path, name="kafka-broker", pipe=True)
        self._buf = b""
        _LIVE_HELPERS.add(self)

    def send(self, obj: dict[str, Any]) -> None:
        assert self._popen.stdin is not None
        self._popen.stdin.write((json.dumps(obj) + "\n").encode())
        self._popen.stdin.flush()

    def read_line(self, deadline: float) -> bytes | None:
        """The next stdout line, or None on EOF; raise ``TimeoutError`` at ``deadline``."""
        assert self._popen.stdout is not None
        fd = self._popen.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def stop(self, timeout: float = 5.0) -> None:
        """Close the pipe (the helper exits on EOF), then SIGTERM/SIGKILL the group. Idempotent."""
        if self._stopped:
            return
        for stream in (self._popen.stdin, self._popen.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        self.terminate(timeout)


_LIVE_HELPERS: weakref.WeakSet[_HelperProcess] = weakref.WeakSet()


def _close_pipes_in_forked_child() -> None:
    # A fork()ed child (multiprocessing, a forking server) inherits the write end of each helper's
    # stdin; while it lives the helper would never see EOF after our death. The child never talks
    # to the helper, so it drops both ends - by pointing the fd numbers at /dev/null rather than
    # closing them, so the file objects' finalizers cannot close an unrelated, reused fd later.
    helpers = list(_LIVE_HELPERS)
    if not helpers:
        return
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        for helper in helpers:
            for stream in (helper._popen.stdin, helper._popen.stdout):
                try:
                    if stream is not None:
                        os.dup2(devnull, stream.fileno())
                except (OSError, ValueError):
                    pass
            helper._stopped = True  # the child must never signal the parent's helper either
    finally:
        os.close(devnull)


os.register_at_fork(after_in_child=_close_pipes_in_forked_child)


class LocalKafkaCluster(KafkaCluster):
    """N in-memory brokers (ids 1..N) on 127.0.0.1, served by a helper process.

    Topics must be created with :meth:`create_topic` (the mock cluster has no CreateTopics handler;
    clients may still auto-create topics on first use). Fault controls: :meth:`broker_down`,
    :meth:`broker_up`, :meth:`set_broker_rtt`, :meth:`set_partition_leader`,
    :meth:`push_request_errors`; :meth:`heal` undoes the broker-level ones.
    """

    #: librdkafka's mock cluster hands records of aborted transactions to read_committed consumers
    #: (a real Kafka backend sets True): a transactional job's exactly-once verdict is unverified here
    isolates_transactions = False
    #: where clients reach the brokers (a container's address in the docker backend)
    broker_host = "127.0.0.1"

    def __init__(self, brokers: int = 3, workdir: str | os.PathLike | None = None,
                 command_timeout: float = 15.0, group_rebalance_delay_ms: int | None = None,
                 bootstrap_port: int | None = None) -> None:
        if brokers < 1:
            raise StackError(f"the Kafka cluster needs at least 1 broker, got {brokers} "
                             "(set --chaos-brokers / ini streamchaos_brokers >= 1)")
        self.brokers = brokers
        self.workdir = Path(workdir) if workdir is not None else None
        self.command_timeout = command_timeout
        # None keeps Kafka's 3 s group.initial.rebalance.delay.ms. Smaller values form a group sooner,
        # but then members joining a formed group can hang in the mock's coordinator until
        # session.timeout.ms (45 s) - seen with 1 and 300 ms in librdkafka 2.16 - so it is opt-in.
        self.group_rebalance_delay_ms = group_rebalance_delay_ms
        #: a fixed port on 127.0.0.1 that also answers as a bootstrap server (``--chaos-kafka-port``),
        #: for jobs that hard-code ``localhost:9092``; a forwarder to a live broker.
        self.bootstrap_port = bootstrap_port or None
        self._forwarders: dict[int, Any] = {}
        self.bootstrap_servers = ""
        self.broker_ids: list[int] = []
        self.ports: dict[int, int] = {}
        self._proc: _HelperProcess | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._topic_seq = itertools.count(1)  # cluster-wide: a re-run test never reuses a name
        self._admin = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The helper process's pid (also its process group id), None before :meth:`start`."""
        return self._proc.pid if self._proc else None

    @property
    def log_path(self) -> Path | None:
        return self._proc.log_path if self._proc else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.alive

    def start(self, timeout: float = 30.0) -> None:
        """Spawn the helper and wait (at most ``timeout`` s) for its ready line."""
        if self.running:
            return
        if self._proc is not None:  # a dead helper from an earlier start
            self._proc.stop()
            self._proc = None
        if self.workdir is None:
            raise StackError("LocalKafkaCluster needs a workdir for the broker log (pass workdir=...)")
        self._check_bootstrap_port()
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PKG_PARENT, env.get("PYTHONPATH", "")) if p)
        proc = _HelperProcess(self._helper_argv(), self.workdir / "kafka-broker.log", env)
        self._proc = proc
        deadline = time.monotonic() + timeout
        try:
            line = proc.read_line(deadline)
        except TimeoutError:
            self.stop()
            raise StackError(self._failure(proc, f"no ready line within {timeout:.0f}s")) from None
        msg = _parse(line)
        if msg is None or msg.get("event") != "ready":
            self.stop()
            if line is None:
                why = "the helper exited before it was ready"
            else:
                why = (msg or {}).get("error") or f"unexpected first line {line!r}"
            raise StackError(self._failure(proc, why))
        self.bootstrap_servers = msg["bootstrap_servers"]
        self.broker_ids = [int(b) for b in msg["broker_ids"]]
        self.ports = {int(b): int(p) for b, p in msg["ports"].items()}
        self._admin = None
        self._start_forwarder()

    def _helper_argv(self, extra: Sequence[str] = ()) -> list[str]:
        """The helper's command line (the docker backend runs it in a container)."""
        argv = [sys.executable, "-u", "-m", _HELPER_MODULE, "--brokers", str(self.brokers), *extra]
        if self.group_rebalance_delay_ms is not None:
            argv += ["--group-rebalance-delay-ms", str(self.group_rebalance_delay_ms)]
        return argv

    def stop(self) -> None:
        """Stop the helper (and with it every broker). Idempotent."""
        with self._lock:
            proc, self._proc = self._proc, None
            self._admin = None
            fwds = list(self._forwarders.values())
        for fwd in fwds:
            fwd.stop()
        if proc is not None:
            proc.stop()

    def reset(self) -> None:
        """A fresh, empty cluster (new broker ports, no topics): what a run with fixed topic names
        needs so that nothing of an earlier run is read. The mock cluster cannot delete topics, and a
        restart takes about 0.3 s. The bootstrap port, if any, keeps answering (for the new brokers)."""
        self.stop()
        self.start()

    def _check_bootstrap_port(self) -> None:
        if self.bootstrap_port:
            _check_port_free(self.bootstrap_port)

    def listen(self, port: int) -> None:
        """Also answer as a bootstrap server on ``127.0.0.1:port`` (e.g. 9092 for a job that hard-codes
        ``localhost:9092``): a forwarder to the first broker. A client bootstraps there and then talks
        to the brokers at the addresses the metadata advertises, as with a real cluster's seed list.
        Kept across :meth:`reset`; removed by :meth:`unlisten` and :meth:`stop`."""
        from pytest_streamchaos.stack import ports
        from pytest_streamchaos.stack.tcpproxy import TcpProxy

        if port in self._forwarders:
            return
        _check_port_free(port)
        ports.reserve(port)
        try:
            self._forwarders[port] = TcpProxy(upstream_port=self.ports[self.broker_ids[0]], listen_port=port,
                                              upstream_host=self.broker_host)
        except Exception as exc:
            raise StackError(f"kafka port {port}: cannot listen on 127.0.0.1:{port} ({exc}; held by "
                             f"{ports.port_holder(port) or 'an unknown process'}); stop that process or choose "
                             "another port") from None

    def unlisten(self, port: int) -> None:
        """Stop answering on ``port`` (see :meth:`listen`)."""
        fwd = self._forwarders.pop(port, None)
        if fwd is not None:
            fwd.stop()

    def _start_forwarder(self) -> None:
        wanted = sorted(set(self._forwarders) | ({self.bootstrap_port} if self.bootstrap_port else set()))
        for port in wanted:  # after a reset the brokers have new ports: forward to the new ones
            self.unlisten(port)
            try:
                self.listen(port)
            except StackError:
                self.stop()
                raise

    def _failure(self, proc: _HelperProcess, why: str) -> str:
        return (f"the embedded Kafka cluster ({self.brokers} brokers) did not start: {why}; "
                f"helper exit code {proc.returncode}; log {proc.log_path}:\n{proc.tail_log()}\n"
                "Fix: check that confluent-kafka>=2.4 is installed (its wheel bundles librdkafka with "
                "the mock cluster) and that 127.0.0.1 accepts listeners")

    # -- the command channel -----------------------------------------------------------------

    def _call(self, op: str, **args: Any) -> Any:
        proc = self._proc
        if proc is None or not proc.alive:
            state = "was not started" if proc is None else f"exited with code {proc.returncode}"
            tail = f"; log tail:\n{proc.tail_log()}" if proc else ""
            raise StackError(f"the embedded Kafka helper {state}; call start() (or heal()){tail}")
        with self._lock:
            req_id = next(self._ids)
            deadline = time.monotonic() + self.command_timeout
            try:
                proc.send({"id": req_id, "op": op, **args})
                while True:
                    line = proc.read_line(deadline)
                    if line is None:
                        raise StackError(f"the embedded Kafka helper closed its pipe during {op!r} "
                                         f"(exit code {proc.returncode}); log tail:\n{proc.tail_log()}")
                    reply = _parse(line)
                    if reply is not None and reply.get("id") == req_id:
                        break
            except TimeoutError:
                raise StackError(f"the embedded Kafka helper did not answer {op!r} within "
                                 f"{self.command_timeout:.0f}s; log tail:\n{proc.tail_log()}") from None
            except (BrokenPipeError, OSError) as exc:
                raise StackError(f"lost the pipe to the embedded Kafka helper during {op!r}: {exc}; "
                                 f"log tail:\n{proc.tail_log()}") from None
        if not reply.get("ok"):
            raise StackError(f"embedded Kafka: {op} {args} failed: {reply.get('error')}")
        return reply.get("result")

    # -- KafkaCluster ------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication: int | None = None,
                     timeout: float = 10.0) -> str:
        """Create ``name`` with ``partitions`` partitions; ``replication`` defaults to
        ``min(3, brokers)``. Returns the name once a fresh client's metadata shows the topic with
        exactly that many partitions, each with a leader and ``replication`` replicas.

        The mock cluster also creates topics by itself -- with its default of 4 partitions -- when
        a client that allows auto-creation (librdkafka producers and admin clients do by default)
        asks for the metadata of a topic that does not exist yet. A topic that got there first is
        not the one the test asked for: that is a :class:`StackError` naming both partition counts,
        never a silently different topic."""
        if replication is None:
            replication = min(3, len(self.broker_ids) or self.brokers)
        try:
            self._call("create_topic", name=name, partitions=partitions, replication=replication)
        except StackError as exc:
            if "already exists" not in str(exc).lower() and "ALREADY_EXISTS" not in str(exc):
                raise
            got = self._topic_shape(name, timeout)
            raise StackError(
                f"topic {name!r}: asked for {partitions} partitions (replication {replication}) but it already exists "
                f"with {got[0] if got else '?'} partitions (replication {got[1] if got else '?'}): a client asked for "
                "its metadata before create_topic and the broker auto-created it with its default; create topics "
                "before any client uses them, or set allow.auto.create.topics=false on that client") from exc
        self._await_topic(name, partitions, replication, timeout)
        return name

    def _topic_shape(self, name: str, timeout: float) -> tuple[int, int] | None:
        """(partitions, replication of partition 0) as a fresh client sees ``name``; None if unknown."""
        md = self._fresh_metadata(timeout)
        t = md.topics.get(name)
        if t is None or t.error is not None or not t.partitions:
            return None
        return len(t.partitions), len(t.partitions[min(t.partitions)].replicas)

    def _await_topic(self, name: str, partitions: int, replication: int, timeout: float) -> None:
        """Poll a fresh client's metadata until ``name`` has exactly ``partitions`` partitions, each
        with a leader and ``replication`` replicas; a different partition count fails at once."""
        deadline = time.monotonic() + timeout  # also bounds each metadata request
        last = ["not listed"]

        def ready() -> bool:
            t = self._fresh_metadata(max(0.5, deadline - time.monotonic())).topics.get(name)
            if t is not None and t.error is None and t.partitions:
                if len(t.partitions) != partitions:
                    raise StackError(f"topic {name!r}: asked for {partitions} partitions, the cluster reports "
                                     f"{len(t.partitions)} (partitions {sorted(t.partitions)})")
                leaderless = sorted(p for p, pm in t.partitions.items() if pm.leader < 0)
                short = sorted(p for p, pm in t.partitions.items() if len(pm.replicas) != replication)
                if not leaderless and not short:
                    return True
                last[0] = f"partitions without a leader {leaderless}, with other than {replication} replicas {short}"
            elif t is not None and t.error is not None:
                last[0] = f"error {t.error}"
            return False

        poll(ready, timeout, interval=0.05, on_timeout=lambda _: StackError(
            f"topic {name!r} ({partitions} partitions, replication {replication}) not ready "
            f"within {timeout:g}s as a fresh client sees it: {last[0]}"))

    def _fresh_metadata(self, timeout: float):
        """All topics' metadata from a new client (nothing cached; it never auto-creates a topic: the
        request names no topic, and auto-creation is off)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "allow.auto.create.topics": "false"})
        return admin.list_topics(timeout=timeout)

    def broker_down(self, broker_id: int) -> None:
        """Close the broker's connections and refuse new ones. Leadership does not move."""
        self._call("broker_down", broker=broker_id)

    def broker_up(self, broker_id: int) -> None:
        self._call("broker_up", broker=broker_id)

    def set_broker_rtt(self, broker_id: int, rtt_ms: int) -> None:
        self._call("set_rtt", broker=broker_id, ms=rtt_ms)

    def heal(self) -> None:
        """All brokers up, no delays, no pending injected errors. A dead helper is restarted (new
        ports and no topics: ``bootstrap_servers`` changes)."""
        if not self.running:
            self.start()
            return
        self._call("heal")

    # -- extras ------------------------------------------------------------------------------

    def set_partition_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Move the leadership of ``topic``/``partition`` to ``broker_id`` (-1: no leader)."""
        self._call("set_leader", topic=topic, partition=partition, broker=broker_id)

    def set_coordinator(self, key_type: str, key: str, broker_id: int) -> None:
        """Pin the ``"group"`` or ``"transaction"`` coordinator of ``key`` to ``broker_id``."""
        self._call("set_coordinator", key_type=key_type, key=key, broker=broker_id)

    def push_request_errors(self, api: str | int, errors: Sequence[int]) -> None:
        """Fail the next ``len(errors)`` requests of ``api`` (a name from :data:`API_KEYS` or an
        ApiKey number) with these Kafka error codes, whichever broker gets them."""
        if isinstance(api, str):
            if api not in API_KEYS:
                raise StackError(f"unknown Kafka API {api!r}; use one of {sorted(API_KEYS)} "
                                 "or an ApiKey number")
            api = API_KEYS[api]
        self._call("push_request_errors", api_key=api, errors=list(errors))

    def status(self) -> dict[str, Any]:
        """The helper's view: brokers, ports, which are down, per-broker RTT, topics created."""
        return self._call("status")

    def ping(self) -> None:
        self._call("ping")

    def pause_brokers(self) -> None:
        """SIGSTOP the helper: every broker of the embedded cluster (one process) hangs, connections open."""
        if self.pid is not None:
            os.kill(self.pid, signal.SIGSTOP)

    def resume_brokers(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def brokers_state(self) -> str | None:
        """psutil's status of the helper process (``stopped`` while paused), None when it is gone."""
        if self.pid is None:
            return None
        try:
            st = psutil.Process(self.pid).status()
        except psutil.Error:
            return None
        return None if st == psutil.STATUS_ZOMBIE else st

    def endpoints(self) -> list[Endpoint]:
        """One ``broker-<id>`` endpoint per broker with its listener port as ``{"kafka": port}``."""
        return [Endpoint(name=f"broker-{b}", role="broker", host=self.broker_host, ports={"kafka": self.ports[b]})
                for b in self.broker_ids]

    def leader_of(self, topic: str, partition: int = 0, timeout: float = 10.0) -> int:
        """The broker id leading ``topic``/``partition``, as the cluster's metadata reports it."""
        md = self._metadata(topic, timeout)
        t = md.topics.get(topic)
        if t is None or t.error is not None or partition not in t.partitions:
            raise StackError(f"no metadata for {topic}[{partition}]: "
                             f"{t.error if t is not None else 'topic unknown'}; create it with create_topic()")
        return int(t.partitions[partition].leader)

    def _metadata(self, topic: str | None, timeout: float):
        from confluent_kafka.admin import AdminClient

        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap_servers,
                                       "allow.auto.create.topics": "false"})
        return self._admin.list_topics(topic=topic, timeout=timeout)

    def for_test(self, nodeid: str) -> KafkaTestView:
        """A view of this cluster whose topic names are unique to the test ``nodeid``."""
        return KafkaTestView(self, nodeid)

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"<LocalKafkaCluster {self.brokers} brokers {self.bootstrap_servers or '-'} {state}>"


class KafkaTestView(KafkaCluster):
    """The session cluster as one test sees it: ``create_topic("orders")`` creates
    ``orders-<hash of the test id>-<n>`` and returns that name. Everything else is the cluster's."""

    def __init__(self, cluster: LocalKafkaCluster, nodeid: str) -> None:
        self._cluster = cluster
        self.nodeid = nodeid
        self._tag = hashlib.sha1(nodeid.encode()).hexdigest()[:8]

    @property
    def bootstrap_servers(self) -> str:  # type: ignore[override]
        return self._cluster.bootstrap_servers

    @property
    def cluster(self) -> LocalKafkaCluster:
        """The session-wide cluster behind this view."""
        return self._cluster

    def topic_name(self, name: str) -> str:
        """The unique name :meth:`create_topic` would give ``name`` now."""
        # Kafka topic names: [a-zA-Z0-9._-], at most 249 characters.
        return f"{name}-{self._tag}-{next(self._cluster._topic_seq)}"

    def create_topic(self, name: str, partitions: int = 1, replication: int | None = None) -> str:
        """Create ``<name>-<test tag>-<n>`` (see :meth:`LocalKafkaCluster.create_topic`)."""
        return self._cluster.create_topic(self.topic_name(name), partitions, replication)

    def broker_down(self, broker_id: int) -> None:
        self._cluster.broker_down(broker_id)

    def broker_up(self, broker_id: int) -> None:
        self._cluster.broker_up(broker_id)

    def set_broker_rtt(self, broker_id: int, rtt_ms: int) -> None:
        self._cluster.set_broker_rtt(broker_id, rtt_ms)

    def heal(self) -> None:
        self._cluster.heal()

    def reset(self) -> None:
        self._cluster.reset()

    def stop(self) -> None:
        self._cluster.stop()

    # the rest of the stack interface, and the cluster's state, are the session cluster's
    def endpoints(self) -> list[Endpoint]:
        return self._cluster.endpoints()

    def leader_of(self, topic: str, partition: int = 0, timeout: float = 10.0) -> int:
        return self._cluster.leader_of(topic, partition, timeout)

    def pause_brokers(self) -> None:
        self._cluster.pause_brokers()

    def resume_brokers(self) -> None:
        self._cluster.resume_brokers()

    def brokers_state(self) -> str | None:
        return self._cluster.brokers_state()

    def listen(self, port: int) -> None:
        self._cluster.listen(port)

    def unlisten(self, port: int) -> None:
        self._cluster.unlisten(port)

    @property
    def broker_ids(self) -> list[int]:  # type: ignore[override]
        return self._cluster.broker_ids

    @property
    def bootstrap_port(self) -> int | None:  # type: ignore[override]
        return self._cluster.bootstrap_port

    @property
    def isolates_transactions(self) -> bool:  # type: ignore[override]
        return self._cluster.isolates_transactions

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cluster, name)

    def __repr__(self) -> str:
        return f"<KafkaTestView {self.nodeid} of {self._cluster!r}>"


def _check_port_free(port: int) -> None:
    from pytest_streamchaos.stack import ports

    holder = ports.port_holder(port)
    if holder is not None:
        raise StackError(f"kafka port {port}: 127.0.0.1:{port} is already in use by {holder}; stop "
                         "that process or choose another port (--chaos-kafka-port / ini streamchaos_kafka_port, "
                         "or chaos.run(kafka_port=...))")


def _parse(line: bytes | None) -> dict[str, Any] | None:
    if line is None:
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None
