"""One started command as a fault target: its own process group, a log file, group-wide signals.

Every :class:`ManagedProcess` runs in a new session (``start_new_session=True``), so its pgid equals
its pid and signals sent to the group reach everything it spawned (a Spark worker's executors, say)
and nothing else. Each one is registered with the reaper (:mod:`.reaper`) while it may be running, so
it dies with the pytest process even when pytest is SIGKILLed.
"""

from __future__ import annotations

import abc
import os
import signal
import subprocess
import time
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

import psutil

from pytest_streamchaos.errors import StackError
from pytest_streamchaos.poll import poll, settled
from pytest_streamchaos.stack.base import Endpoint

if TYPE_CHECKING:
    from pytest_streamchaos.stack.host import Host


def children(pid: int) -> list[int]:
    """The direct children of ``pid``, from the kernel's list of each of its threads
    (``/proc/<pid>/task/<tid>/children``): no scan of the host's processes. [] once it is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(c) for c in f.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended meanwhile
            return _children_by_psutil(pid)  # a kernel without CONFIG_PROC_CHILDREN
        except (OSError, ValueError):
            continue
    return out


def _children_by_psutil(pid: int) -> list[int]:
    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def descendants(pid: int) -> list[int]:
    """``pid``'s children, their children ... (not ``pid`` itself), found from the process tree down."""
    out: list[int] = []
    todo = children(pid)
    while todo:
        child = todo.pop()
        out.append(child)
        todo.extend(children(child))
    return out


def process_cmdline(pid: int) -> str:
    """``pid``'s command line, its arguments joined by spaces ("" once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _live_in_group(pid: int, pgid: int) -> float | None:
    """The start time of ``pid`` when it is a live (non-zombie) member of process group ``pgid``, else None."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE or os.getpgid(pid) != pgid:
            return None
        return proc.create_time()
    except (ProcessLookupError, psutil.Error, OSError):
        return None


class GroupMembers:
    """The live processes of one process group, found from its leader's process tree down, with no
    scan of the host's processes. A member whose parent died is re-parented out of that tree, so every
    member once seen is remembered (with its start time, against pid reuse) and looked at again, with
    its own descendants: what a group kill leaves behind is found as long as it was seen once."""

    def __init__(self, leader: int) -> None:
        self.leader = leader
        self._seen: dict[int, float] = {}

    def __call__(self) -> list[int]:
        found: dict[int, float] = {}
        roots = [(self.leader, None), *self._seen.items()]
        for root, started in roots:
            if root in found:
                continue
            if root != self.leader and _live_in_group(root, self.leader) != started:
                continue  # gone, or its pid now names another process
            for pid in (root, *descendants(root)):
                if pid not in found and (t := _live_in_group(pid, self.leader)) is not None:
                    found[pid] = t
        self._seen = found
        return sorted(found)


class LogFile:
    """What a process wrote to its log file since it started (``log_path``, ``_log_offset``): shared
    by :class:`ManagedProcess` and the docker backend's container processes, which log to a file too."""

    log_path: Path
    _log_offset: int = 0

    # -- logs ----------------------------------------------------------------------------------
    def tail_log(self, n: int = 40) -> str:
        """The last ``n`` lines of the log (for error messages)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - 64 * 1024))
                lines = f.read().decode(errors="replace").splitlines()
        except OSError as exc:
            return f"<no log at {self.log_path}: {exc}>"
        return "\n".join(lines[-n:])

    def log_since_start(self, max_bytes: int = 1 << 20) -> str:
        """What this process (not an earlier one sharing the log file) has logged so far (the last
        ``max_bytes`` of it)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(self._log_offset, f.tell() - max_bytes))
                return f.read().decode(errors="replace")
        except OSError:
            return ""


class ManagedProcess(LogFile):
    """A command started in its own process group with stdout+stderr appended to ``log_path``.

    ``env`` is the complete environment of the child (nothing is inherited implicitly). The process
    starts in the constructor. ``job=True``: a process of the system under test (Spark, the user's
    driver), started in the job's group (:mod:`.jobgroup`) so network faults hit it and not the harness.
    ``host``: the session's :class:`~.host.Host` whose reaper and job group it uses (default: the current
    one). ``pipe=True``: stdin and stdout are text pipes to this process (:attr:`stdin` / :attr:`stdout`, e.g. a
    helper that answers ``ready``), only stderr goes to the log.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        log_path: str | os.PathLike,
        cwd: str | os.PathLike | None = None,
        name: str | None = None,
        job: bool = False,
        subgroup: str | None = None,
        pipe: bool = False,
        host: Host | None = None,
    ) -> None:
        from pytest_streamchaos.stack.host import current

        host = host or current()
        self.argv = [str(a) for a in argv]
        self.name = name or Path(self.argv[0]).name
        if job:  # a process of the job under test: in the job's group, so faults can tell it from the harness
            self.argv = host.job_group.wrap(self.argv, subgroup)
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.paused = False
        self._stopped = False
        reaper = host.reaper  # before spawning: a failing watchdog must not leave an orphan behind
        with open(self.log_path, "ab") as log:
            self._log_offset = log.tell()
            log.write(f"=== {time.strftime('%H:%M:%S')} start: {' '.join(self.argv)}\n".encode())
            log.flush()
            try:
                self._popen = subprocess.Popen(
                    self.argv,
                    env=dict(env),
                    cwd=None if cwd is None else str(cwd),
                    stdin=subprocess.PIPE if pipe else subprocess.DEVNULL,
                    stdout=subprocess.PIPE if pipe else log,
                    stderr=log if pipe else subprocess.STDOUT,
                    start_new_session=True,
                    close_fds=True,
                    text=pipe,
                )
            except OSError as exc:
                raise OSError(f"cannot start {self.name} ({self.argv[0]}): {exc}") from exc
        self.pid: int = self._popen.pid
        self.pgid: int = self._popen.pid  # new session => pgid == pid
        self._members = GroupMembers(self.pgid)
        self._reaper = reaper
        reaper.register_pgid(self.pgid)

    def __repr__(self) -> str:
        state = "paused" if self.paused else ("alive" if self.alive else f"exited {self.returncode}")
        return f"<ManagedProcess {self.name} pid={self.pid} {state}>"

    @property
    def stdout(self) -> IO[str]:
        """Its standard output (``pipe=True`` only)."""
        if self._popen.stdout is None:
            raise ValueError(f"{self.name} was started without pipe=True: its output goes to {self.log_path}")
        return self._popen.stdout

    @property
    def stdin(self) -> IO[str]:
        """Its standard input (``pipe=True`` only)."""
        if self._popen.stdin is None:
            raise ValueError(f"{self.name} was started without pipe=True")
        return self._popen.stdin

    # -- state ---------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """Whether the group leader is still running (a paused process is alive)."""
        return self._popen.poll() is None

    @property
    def returncode(self) -> int | None:
        """The leader's exit code (negative: killed by that signal), None while running."""
        return self._popen.poll()

    def members(self) -> list[int]:
        """PIDs of all live processes in this process group (the leader and its descendants, and what
        of them outlived their parent: :class:`GroupMembers`)."""
        return self._members()

    # -- signals -------------------------------------------------------------------------------
    def signal(self, sig: int) -> None:
        """Send ``sig`` to the whole process group (no error if it is already gone; nothing once
        stopped, so a reused pgid is never hit)."""
        if self._stopped:
            return
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def pause(self, timeout: float = 5.0, wait: bool = True) -> None:
        """SIGSTOP the whole group (a frozen process: sockets stay open, nothing answers) and, unless
        ``wait=False``, wait until every member is stopped (signal delivery is asynchronous; a fault
        stamps its time between the two: see :meth:`wait_paused`)."""
        self.signal(signal.SIGSTOP)
        self.paused = True
        if wait:
            self.wait_paused(timeout)

    def wait_paused(self, timeout: float = 5.0) -> None:
        """Wait until every member of the group is stopped (``TimeoutError`` naming their states)."""
        self._await_states(lambda st: st == psutil.STATUS_STOPPED, "stopped", timeout)

    def resume(self, timeout: float = 5.0) -> None:
        """SIGCONT the whole group and wait until no member is stopped any more."""
        self.signal(signal.SIGCONT)
        self.paused = False
        self._await_states(lambda st: st != psutil.STATUS_STOPPED, "running", timeout)

    def _await_states(self, ok: Callable[[str], bool], what: str, timeout: float) -> None:
        states: dict[int, str] = {}

        def reached() -> bool:
            states.clear()
            for pid in self.members():
                try:
                    states[pid] = psutil.Process(pid).status()
                except psutil.Error:
                    continue
            return all(ok(st) for st in states.values())

        poll(reached, timeout, lambda _: TimeoutError(f"{self.name} (pgid {self.pgid}): members not all {what} "
                                                      f"after {timeout}s; states {dict(states)}"), interval=0.02)

    def kill(self, timeout: float = 10.0, wait: bool = True) -> None:
        """SIGKILL the whole group and, unless ``wait=False``, wait until every member is gone
        (:meth:`wait_gone`; a fault stamps its time between the signal and that wait)."""
        self.signal(signal.SIGKILL)
        self.signal(signal.SIGCONT)  # harmless; makes sure nothing stays stopped on odd kernels
        self.paused = False
        if wait:
            self._reap_group(timeout)

    def wait_gone(self, timeout: float = 10.0) -> None:
        """Wait until the leader has exited and no group member is left (after a signal sent by
        :meth:`signal` or ``kill(wait=False)``); SIGKILL what is left at the deadline and raise
        ``TimeoutError``."""
        self._reap_group(timeout)

    def terminate(self, timeout: float = 10.0) -> None:
        """SIGTERM the group; SIGKILL whatever is left after ``timeout`` seconds. Idempotent."""
        if self._stopped:
            return
        if self.alive or self.members():
            self.signal(signal.SIGTERM)
            self.signal(signal.SIGCONT)  # a stopped process only acts on SIGTERM once continued
            self.paused = False
            if not settled(lambda: not self.alive and not self.members(), timeout):
                self.signal(signal.SIGKILL)
        self._reap_group(timeout)

    stop = terminate

    @property
    def stopped(self) -> bool:
        """Stopped by this handle (terminated or killed and reaped): signals go nowhere any more."""
        return self._stopped

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the group leader to exit and return its exit code
        (raises ``subprocess.TimeoutExpired``)."""
        return self._popen.wait(timeout)

    # -- internals -----------------------------------------------------------------------------
    def _reap_group(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        try:
            self._popen.wait(max(0.1, timeout))
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self._popen.wait(5)
        def still_alive(_: bool) -> TimeoutError:
            self.signal(signal.SIGKILL)
            return TimeoutError(f"{self.name} (pgid {self.pgid}): group members {self.members()} still alive "
                                f"{timeout:.0f}s after the leader was stopped")

        poll(lambda: not self.members(), max(0.0, deadline - time.monotonic()), still_alive, interval=0.05)
        if not self._stopped:
            self._stopped = True
            try:
                self._reaper.unregister_pgid(self.pgid)
            except Exception:  # a gone watchdog must not break teardown
                pass


def terminate_all(procs: Sequence[DaemonProcess], timeout: float = 3.0) -> None:
    """Stop many processes at once: SIGTERM every group, wait up to ``timeout`` for all of them
    together, then SIGKILL the rest (teardown costs one timeout, not one per process)."""
    live = [p for p in procs if not p.stopped]
    for p in live:
        p.signal(signal.SIGTERM)
        p.signal(signal.SIGCONT)
        p.paused = False
    settled(lambda: not any(p.alive or p.members() for p in live), timeout)
    for p in live:
        p.kill(timeout=10)


class DaemonProcess(Protocol):
    """One start of a daemon as the clusters drive it: a :class:`ManagedProcess` on this host, a container
    (``stack.docker.container.ContainerProcess``) in the docker backend."""

    pid: int
    pgid: int
    paused: bool
    log_path: Path

    @property
    def alive(self) -> bool: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def stopped(self) -> bool: ...

    def members(self) -> list[int]: ...

    def signal(self, sig: int) -> None: ...

    def kill(self, timeout: float = 10.0, wait: bool = True) -> None: ...

    def wait_gone(self, timeout: float = 10.0) -> None: ...

    def pause(self, timeout: float = 5.0, wait: bool = True) -> None: ...

    def wait_paused(self, timeout: float = 5.0) -> None: ...

    def resume(self, timeout: float = 5.0) -> None: ...

    def terminate(self, timeout: float = 10.0) -> None: ...

    def tail_log(self, n: int = 40) -> str: ...

    def log_since_start(self, max_bytes: int = 1 << 20) -> str: ...


class Daemon(abc.ABC):
    """A restartable daemon (a Spark master or worker, a Kafka node): the current process (or None) plus what
    it takes to start it again. ``role`` and ``index`` name it (``worker-1``, ``broker-2``)."""

    role = "daemon"
    host = "127.0.0.1"  #: where its peers and the harness reach it (a container's address in the docker backend)

    def __init__(self, index: int, start: Callable[[], DaemonProcess]) -> None:
        self.index = index
        self._start = start
        self.process: DaemonProcess | None = None

    @property
    def name(self) -> str:
        return f"{self.role}-{self.index}"

    def started(self) -> DaemonProcess:
        """Its current process; :class:`~pytest_streamchaos.errors.StackError` when it was never started."""
        if self.process is None:
            raise StackError(f"{self.name} was never started")
        return self.process

    def start(self) -> DaemonProcess:
        self.process = self._start()
        return self.process

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def pgid(self) -> int | None:
        return self.process.pgid if self.process else None

    @property
    def alive(self) -> bool:
        """The JVM is running (paused counts as alive)."""
        return self.process is not None and self.process.alive

    @property
    def paused(self) -> bool:
        return self.process is not None and self.process.paused

    def tail_log(self, n: int = 30) -> str:
        return self.process.tail_log(n) if self.process else "<never started>"

    @abc.abstractmethod
    def endpoint(self) -> Endpoint:
        """Where its peers reach it: its address and ports (each kind of daemon says which)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.process!r}>"


def check_alive(daemons: Iterable[Daemon], service: str, *, spared: Container[str] = (),
                during: str = " during start-up", cause: Callable[[str], str] | None = None, fix: str = "") -> None:
    """The check every readiness wait of the stack makes on each look (with :func:`~pytest_streamchaos.poll.poll`):
    :class:`StackError` when one of ``daemons`` has exited -- a daemon that died does not come back by waiting --
    naming the ``service``, its exit code, ``cause(its log)`` when given, its log and its tail, then ``fix``.
    ``spared``: the names of daemons a fault killed on purpose."""
    for d in daemons:
        p = d.process
        if p is not None and not p.alive and d.name not in spared:
            why = cause(p.log_since_start()) if cause is not None else ""
            raise StackError(f"{service} {d.name} exited with code {p.returncode}{during}{why} (log {p.log_path}):\n"
                             f"{p.tail_log(25)}{fix}")


def end_with(proc: DaemonProcess, sig: int, wait: bool = True, timeout: float = 30.0) -> None:
    """End ``proc``'s group with ``sig`` (a crash: SIGKILL, via its ``kill``; a shutdown: SIGTERM, or any other)
    and, with ``wait``, return once it is gone (the fault that sent it stamps its time in between)."""
    if sig == signal.SIGKILL:
        proc.kill(timeout=10, wait=wait)
        return
    proc.signal(sig)
    if wait:
        proc.wait_gone(timeout)
