"""One node of the docker backend: a container that behaves like a :class:`~..process.ManagedProcess`.

The clusters (``stack/standalone``, ``stack/kraft``) restart, kill, pause and wait on their daemons through
a small process API (``stack.process.DaemonProcess``: ``alive``, ``signal``, ``kill``, ``pause`` ...).
:class:`ContainerProcess` offers the same API for a container, so the docker backend reuses all of that
logic (start-up gates, healing, the stall nudger) and differs only in where a daemon is started
(``stack.docker.placement``).

A kill is ``docker kill`` (SIGKILL to the container's init, so everything in it dies at once, as a
machine that loses power); a pause is ``docker pause`` (the cgroup freezer: sockets stay open, nothing
answers); a restart is a new container with the same name and address. The daemon writes its log to a
file in a directory mounted from the host, so logs survive the container and read like local ones.
"""

from __future__ import annotations

import shlex
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from testcontainers.core.container import DockerContainer

from pytest_streamchaos.poll import settled, wait_for
from pytest_streamchaos.stack.docker.engine import DockerSession
from pytest_streamchaos.stack.process import LogFile

_LIVE = ("running", "paused", "restarting")


class StackContainer(DockerContainer):
    """The base container of the backend (testcontainers' ``DockerContainer``): the session's labels,
    its network at a fixed address, the host's runtime mounted, ``docker-init`` as PID 1 (so signals
    reach the daemon and zombies are reaped)."""

    def __init__(self, session: DockerSession, image: str, name: str, ip: str, *,
                 command: Sequence[str], env: Mapping[str, str], volumes: Mapping[str, Mapping[str, str]]) -> None:
        import docker

        assert session.network is not None  # made when the session opened
        net = session.network.name
        super().__init__(image, name=name, env=dict(env))
        # keyword arguments of docker's create call (one with_kwargs: it replaces, not adds). The network
        # goes here, not as testcontainers' Network: a fixed address needs the endpoint config.
        self.with_kwargs(init=True, labels=dict(session.labels), hostname=name, network=net,
                         networking_config={net: docker.types.EndpointConfig("1.41", ipv4_address=ip)})
        self.with_command(list(command))
        # docker-py's {host: {"bind", "mode"}} form, which testcontainers passes on (its type names its own Mount)
        self.volumes = {h: dict(m) for h, m in volumes.items()}  # type: ignore[misc]
        self.ip = ip


class ContainerProcess(LogFile):
    """A daemon in its own container, with :class:`~..process.ManagedProcess`'s API.

    ``argv`` runs in the container with ``env`` (nothing of the host's environment), its output
    appended to ``log_path`` (a host path mounted into the container at the same path). Any earlier
    container of the same name is removed first: a restarted node gets the same name and address.
    """

    def __init__(self, session: DockerSession, image: str, argv: Sequence[str], *, env: Mapping[str, str],
                 log_path: str | Path, name: str, ip: str, volumes: Mapping[str, Mapping[str, str]]) -> None:
        self.name, self.ip, self.session = name, ip, session
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._log_offset = log.tell()
            log.write(f"=== {time.strftime('%H:%M:%S')} start container {name} ({ip}): {shlex.join(argv)}\n".encode())
        self.paused = False
        self._stopped = False
        self._signal_thread: threading.Thread | None = None
        remove_named(session, name)
        shell = f"exec {shlex.join(argv)} >> {shlex.quote(str(self.log_path))} 2>&1"
        self.container = StackContainer(session, image, name, ip, command=["sh", "-c", shell], env=env,
                                        volumes=volumes)
        self.container.start()
        self._docker = self.container.get_wrapped_container()
        self._docker.reload()
        self.pid: int = int(self._docker.attrs["State"]["Pid"])
        self.pgid: int = self.pid

    def __repr__(self) -> str:
        return f"<ContainerProcess {self.name} {self.ip} {self.status()}>"

    # -- state ---------------------------------------------------------------------------------
    def status(self) -> str:
        """Docker's state of the container (``running``, ``paused``, ``exited`` ...; ``removed``)."""
        try:
            self._docker.reload()
        except Exception:
            return "removed"
        return str(self._docker.status)

    @property
    def alive(self) -> bool:
        return self.status() in _LIVE

    @property
    def returncode(self) -> int | None:
        if self.alive:
            return None
        try:
            return int(self._docker.attrs["State"]["ExitCode"])
        except (KeyError, TypeError, ValueError):
            return -signal.SIGKILL

    def members(self) -> list[int]:
        """The container's init while it runs (its processes live and die with it)."""
        return [self.pid] if self.alive else []

    # -- signals -------------------------------------------------------------------------------
    def signal(self, sig: int) -> None:
        """SIGSTOP / SIGCONT pause and resume the whole container; any other signal goes to the daemon
        (through init), sent from a thread: the daemon answers a SIGKILL only once the container is
        gone, and a fault is stamped when this returns, which must be when the signal leaves, not
        after the kill's effects (Spark may notice the lost executor first). :meth:`wait_gone` waits
        for the effect. Nothing once stopped."""
        if self._stopped:
            return
        if sig in (signal.SIGSTOP, signal.SIGCONT):
            self._pause_call(sig)
            return
        self._signal_thread = threading.Thread(target=self._kill_call, args=(int(sig),), daemon=True,
                                               name=f"docker-kill-{self.name}")
        self._signal_thread.start()

    def _kill_call(self, sig: int) -> None:
        try:
            self._docker.kill(signal=sig)
        except Exception:  # not running (any more)
            pass

    def _pause_call(self, sig: int) -> None:
        try:
            if sig == signal.SIGSTOP:
                self._docker.pause()
            elif self.status() == "paused":
                self._docker.unpause()
        except Exception:  # it stopped meanwhile
            pass

    def pause(self, timeout: float = 5.0, wait: bool = True) -> None:
        self.signal(signal.SIGSTOP)
        self.paused = True
        if wait:
            self.wait_paused(timeout)

    def wait_paused(self, timeout: float = 5.0) -> None:
        wait_for(lambda: self.status() == "paused", timeout, f"container {self.name} paused", self.status)

    def resume(self, timeout: float = 5.0) -> None:
        self.signal(signal.SIGCONT)
        self.paused = False
        wait_for(lambda: self.status() != "paused", timeout, f"container {self.name} resumed", self.status)

    def kill(self, timeout: float = 10.0, wait: bool = True) -> None:
        """``docker kill``: the container and everything in it dies at once."""
        if self.paused:
            self.signal(signal.SIGCONT)  # a frozen cgroup takes the SIGKILL only once thawed
        self.signal(signal.SIGKILL)
        self.paused = False
        if wait:
            self.wait_gone(timeout)

    def wait_gone(self, timeout: float = 10.0) -> None:
        wait_for(lambda: not self.alive, timeout, f"container {self.name} gone", self.status)
        if self._signal_thread is not None:
            self._signal_thread.join(timeout)
        self._stopped = True

    def terminate(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; the container is removed. Idempotent."""
        if not self._stopped and self.alive:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            if not settled(lambda: not self.alive, timeout):
                self.signal(signal.SIGKILL)
            self.wait_gone(timeout)
        self._stopped = True
        self.remove()

    stop = terminate

    @property
    def stopped(self) -> bool:
        """Stopped by this handle: signals go nowhere any more."""
        return self._stopped

    def remove(self) -> None:
        try:
            self._docker.remove(force=True, v=True)
        except Exception:  # already removed
            pass


def remove_named(session: DockerSession, name: str) -> None:
    """Remove the container named ``name`` (running or not) if there is one."""
    for c in session.client.containers.list(all=True, ignore_removed=True, filters={"name": f"^/{name}$"}):
        c.remove(force=True, v=True)

