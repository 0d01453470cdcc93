"""The job's links to the Kafka brokers, through Toxiproxy: where network faults on Kafka links act.

Clients connect to the address a broker *advertises*, so a proxy in front of the bootstrap port alone
would be bypassed. Each node therefore gets one proxy (``job-broker-<id>``) that its ``JOB`` listener is
advertised at: every connection the job's clients open to a broker goes through it, while the harness
(generator, collector, admin) talks to the brokers' own listener and is never touched. A fixed
bootstrap port a job hard-codes (``localhost:9092``) is one more proxy, to a live broker.

Without Toxiproxy the stack still runs: the JOB listener is advertised directly, and network faults on Kafka
links fall back to iptables on its ports. That is so where it cannot be had (no Go to build it, see
:mod:`.toxiproxy`), and where it is not built yet and no test of the session faults the job's Kafka links
(``start_server(build=False)``): a first run (``./dev demo``) does not wait for its build. A fixed bootstrap
port (:meth:`JobLinks.listen`) starts a server then, building it on this first use; where none can be had it
fails naming :attr:`reason`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from pytest_streamchaos.machine.ports import HOST, port_holder
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.host import Host
from pytest_streamchaos.stack.toxiproxy import ToxiProxy, ToxiproxyServer, toxiproxy_server_binary


class JobLinks:
    """The proxies of the job's Kafka links on one ``toxiproxy-server`` (see the module docstring)."""

    def __init__(self, server: ToxiproxyServer | None, reason: str | None = None) -> None:
        self.server = server
        #: why there is no Toxiproxy (None when there is)
        self.reason = reason
        self.nodes: dict[int, ToxiProxy] = {}
        self.bootstrap: dict[int, ToxiProxy] = {}
        #: how to start a server later, on first use (set by ``start_server(build=False)`` that found none)
        self._later: tuple[str | os.PathLike, Callable[[str], None] | None, Host | None] | None = None
        #: how many listeners asked for each bootstrap port (the session's ``--chaos-kafka-port`` and a run's
        #: ``kafka_port=``): the proxy goes with the last :meth:`unlisten`, never from under another
        self._listeners: dict[int, int] = {}

    def start_server(self, workdir: str | os.PathLike, progress: Callable[[str], None] | None = None,
                     host: Host | None = None, build: bool = True) -> None:
        """A server of their own, or none, saying why (:attr:`reason`). ``build``: build the pinned release if it
        is not built yet (once per machine, ~40 s on a fresh one); else go without, and build it on first use
        (:meth:`listen`)."""
        try:
            self.server, self.reason = ToxiproxyServer(workdir, binary=toxiproxy_server_binary(progress, build=build),
                                                       host=host), None
        except StackError as exc:
            self.server, self.reason = None, str(exc)
            if not build:
                self._later = (workdir, progress, host)
                self.reason = (f"Toxiproxy is not built yet and no test of this session faults the job's Kafka links "
                               f"({exc}): the job reaches the brokers directly")

    @property
    def available(self) -> bool:
        return self.server is not None

    def add_node(self, node_id: int, upstream: str) -> tuple[str, int]:
        """The proxy of one node's JOB listener (``upstream``); the address to advertise."""
        assert self.server is not None
        proxy = self.server.create_proxy(f"job-broker-{node_id}", upstream)
        self.nodes[node_id] = proxy
        return HOST, proxy.listen_port

    def proxies(self, node_ids: Sequence[int] | None = None) -> list[ToxiProxy]:
        """The proxies of these nodes (all, and the bootstrap ones, when None); none when the nodes have
        none (a bootstrap proxy alone carries only the first metadata request: a fault on the links then
        acts on the JOB listeners' ports)."""
        if not self.nodes:
            return []
        if node_ids is None:
            return [*self.nodes.values(), *self.bootstrap.values()]
        return [self.nodes[n] for n in node_ids if n in self.nodes]

    def listen(self, port: int, upstream: str) -> None:
        """A bootstrap proxy on ``127.0.0.1:port`` to ``upstream`` (a live broker's JOB listener); a server
        not started for want of the binary is started now, built on this first use."""
        if self.server is None and self._later is not None:
            workdir, progress, host = self._later
            self.start_server(workdir, progress, host)
            self._later = None if self.server is not None else self._later
        if self.server is None:
            raise StackError(f"kafka port {port}: answering on a fixed port needs Toxiproxy, which is not available "
                             f"({self.reason})")
        if port in self.bootstrap:
            self._listeners[port] += 1
            return
        holder = port_holder(port)
        if holder is not None:
            raise StackError(f"kafka port {port}: 127.0.0.1:{port} is already in use by {holder}; stop that process "
                             "or choose another port (--chaos-kafka-port / ini streamchaos_kafka_port, or "
                             "chaos.run(kafka_port=...))")
        self.server.host.ports.reserve(port)
        self.bootstrap[port] = self.server.create_proxy(f"job-bootstrap-{port}", upstream, listen_port=port)
        self._listeners[port] = 1

    def unlisten(self, port: int) -> None:
        """One :meth:`listen` of ``port`` undone; the proxy is removed with the last one."""
        self._listeners[port] = self._listeners.get(port, 1) - 1
        if self._listeners[port] > 0:
            return
        del self._listeners[port]
        proxy = self.bootstrap.pop(port, None)
        if proxy is not None:
            proxy.destroy()

    def retarget(self, dead: str, alive: Sequence[str]) -> None:
        """Point the bootstrap proxies that lead to ``dead`` at the first of ``alive`` (a job that starts
        while a broker is down bootstraps from a live one, as from a seed list that names them all)."""
        for proxy in self.bootstrap.values():
            if proxy.upstream == dead and alive:
                proxy.set_upstream(alive[0])

    def reset(self) -> None:
        """Every proxy enabled, no toxic left."""
        if self.server is not None:
            self.server.reset()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.nodes.clear()
        self.bootstrap.clear()
        self._listeners.clear()
