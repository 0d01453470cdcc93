"""The Docker daemon, the session's labels and network, and clean-up of everything labelled.

Every container and network the plugin creates carries :data:`LABEL` = the session id and
:data:`OWNER` = the pid of the pytest process on this host. Three things remove them:

1. the fixtures' teardown (normal end);
2. the plugin's reaper (``stack/reaper.py``), which runs one ``docker rm``/``docker network rm`` of the
   session's label when pytest dies without teardown (SIGKILL) - the part Ryuk plays in
   testcontainers, which cannot be pulled here (``TESTCONTAINERS_RYUK_DISABLED=true``);
3. :func:`sweep_orphans` at the next session start: whatever carries an owner pid that no longer
   runs on this host (a reaper that was itself killed).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.host import Host, current

if TYPE_CHECKING:  # docker-py: imported when the backend is used; untyped (mypy reads it as Any)
    from docker import DockerClient
    from docker.models.networks import Network

LABEL = "org.pytest-streamchaos.session"  #: the session id
OWNER = "org.pytest-streamchaos.owner"  #: "<hostname>:<pid>" of the pytest process that created it
#: where the session network's /24 is taken from (first one that no route or network uses)
SUBNET_POOL = ipaddress.IPv4Network("10.213.0.0/16")
DOCKER_FIX = ("start the Docker daemon (`dockerd > /var/log/dockerd.log 2>&1 &` where there is no systemd; "
              "`./dev setup` does it), or point DOCKER_HOST at one")


def connect(timeout: float = 10.0) -> DockerClient:
    """A docker-py client of the daemon at ``DOCKER_HOST`` (default the local socket), pinged;
    :class:`StackError` naming the fix when there is none."""
    try:
        import docker
    except ImportError:
        raise StackError("the docker backend needs the docker package; fix: pip install docker testcontainers") \
            from None
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=int(timeout))
        client.ping()
    except Exception as exc:
        raise StackError(f"no Docker daemon answers at {where} ({type(exc).__name__}); fix: {DOCKER_FIX}") from None
    return client


def owner_id(pid: int | None = None) -> str:
    return f"{socket.gethostname()}:{pid or os.getpid()}"


def _owner_gone(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another machine's session (a shared remote daemon): not ours to judge
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def sweep_orphans(client: DockerClient) -> list[str]:
    """Remove the containers and networks of sessions whose pytest process is gone; their names."""
    removed = []
    for c in client.containers.list(all=True, ignore_removed=True, filters={"label": LABEL}):
        if _owner_gone(c.labels.get(OWNER, "")):
            c.remove(force=True, v=True)
            removed.append(c.name)
    for n in client.networks.list(filters={"label": LABEL}):
        if _owner_gone(n.attrs.get("Labels", {}).get(OWNER, "")):
            n.remove()
            removed.append(n.name)
    return removed


def _used_networks(client: DockerClient) -> list[ipaddress.IPv4Network]:
    used = []
    try:
        with open("/proc/net/route") as f:
            rows = [line.split() for line in f.readlines()[1:]]
        for row in rows:
            dest, mask = (ipaddress.IPv4Address(bytes.fromhex(x)[::-1]) for x in (row[1], row[7]))
            if int(mask):
                used.append(ipaddress.IPv4Network(f"{dest}/{mask}", strict=False))
    except (OSError, ValueError, IndexError):
        pass
    for n in client.networks.list():
        for pool in (n.attrs.get("IPAM") or {}).get("Config") or []:
            if pool.get("Subnet") and ":" not in pool["Subnet"]:
                used.append(ipaddress.IPv4Network(pool["Subnet"], strict=False))
    return used


def free_subnet(client: object) -> ipaddress.IPv4Network:
    """A /24 of :data:`SUBNET_POOL` that no route of this host and no Docker network overlaps."""
    used = _used_networks(client)
    for net in SUBNET_POOL.subnets(new_prefix=24):
        if not any(net.overlaps(u) for u in used):
            return net
    raise StackError(f"no free /24 left in {SUBNET_POOL} for the session's Docker network; fix: remove unused "
                     "networks (docker network prune)")


@dataclass
class DockerSession:
    """One pytest session's share of the daemon: its labels, its network and its clean-up (``host``: the
    session's, whose reaper removes them if pytest dies; default: the current one)."""

    client: DockerClient
    host: Host | None = None
    id: str = field(default_factory=lambda: f"sc-{os.getpid()}-{uuid.uuid4().hex[:6]}")
    network: Network | None = None
    subnet: ipaddress.IPv4Network | None = None
    _next_ip: int = 10

    @property
    def labels(self) -> dict[str, str]:
        return {LABEL: self.id, OWNER: owner_id()}

    @property
    def gateway(self) -> str:
        """The host's address on the session network: where containers reach the driver."""
        assert self.subnet is not None
        return str(self.subnet.network_address + 1)

    def open(self) -> DockerSession:
        """Sweep orphans, register the reaper's clean-up, create the network."""
        sweep_orphans(self.client)
        self.host = self.host or current()
        self.host.reaper.register_command(self.id, ["sh", "-c", self.cleanup_script()])
        self.subnet = free_subnet(self.client)
        import docker

        ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=str(self.subnet),
                                                                          gateway=self.gateway)])
        self.network = self.client.networks.create(self.id, driver="bridge", ipam=ipam, labels=self.labels,
                                                   options={"com.docker.network.bridge.name": self.id[:15]})
        return self

    def next_ip(self) -> str:
        """A fixed address for a new node (kept across its restarts, so peers find it again)."""
        assert self.subnet is not None
        ip = str(self.subnet.network_address + self._next_ip)
        self._next_ip += 1
        return ip

    def cleanup_script(self) -> str:
        sel = f"label={LABEL}={self.id}"
        return (f"docker ps -aq --filter {sel} | xargs -r docker rm -f -v >/dev/null 2>&1; "
                f"docker network ls -q --filter {sel} | xargs -r docker network rm >/dev/null 2>&1; true")

    def close(self) -> None:
        """Remove every container and the network of this session. Idempotent."""
        for c in self.client.containers.list(all=True, ignore_removed=True, filters={"label": f"{LABEL}={self.id}"}):
            try:
                c.remove(force=True, v=True)
            except Exception:  # already gone
                pass
        if self.network is not None:
            try:
                self.network.remove()
            except Exception:
                pass
            self.network = None
        (self.host or current()).reaper.unregister_command(self.id)
