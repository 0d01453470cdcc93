"""The user's job as the runner and the faults drive it: one spark-submit command and environment that
is started, killed, paused and restarted any number of times (:class:`SparkJob`, the stack's
:class:`~..base.JobHandle`), each start a :class:`~..base.Launch` in its own process group."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.errors import LaunchError
from pytest_streamchaos.events import Kind, QueryStarted
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.poll import poll
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.stack.base import Executor, Launch
from pytest_streamchaos.stack.host import Host
from pytest_streamchaos.stack.process import ManagedProcess, descendants


class JobFailed(RuntimeError):
    """The driver exited with an error (or while it was expected to run). Carries the log tail."""

    def __init__(self, message: str, returncode: int | None = None, log_tail: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.log_tail = log_tail


@dataclass(frozen=True)
class JobCommand:
    """What a :class:`SparkJob` starts: spark-submit's command line and environment, in ``workdir``."""

    name: str
    script: Path
    argv: list[str]
    env: dict[str, str]
    workdir: Path
    event_log_dir: Path
    effective_conf: dict[str, str]
    args: tuple[str, ...] = ()
    deploy_mode: str = "client"
    notes: tuple[str, ...] = ()
    #: the log's name in ``workdir`` (a second process of one job, a Connect server, keeps its own)
    log_name: str = "driver.log"
    #: what the process is on the timeline: ``<role>_launched`` / ``_killed`` / ``_stopped``, target ``<role>``
    role: str = "driver"


class SparkJob:
    """One user job (see the module docstring). Made by a launcher (``SparkCluster.launcher(...)``);
    ``executors``: the cluster's answer to which executors an application runs."""

    def __init__(self, command: JobCommand, *, host: Host, executors: Callable[[str], Sequence[Executor]]) -> None:
        self.command, self.host, self._executors = command, host, executors
        self.name, self.script, self.argv, self.env = command.name, command.script, command.argv, command.env
        self.workdir, self.event_log_dir = command.workdir, command.event_log_dir
        self.effective_conf = command.effective_conf  #: every ``--conf`` passed to spark-submit
        self.args, self.deploy_mode = command.args, command.deploy_mode
        #: what the launcher changed about the job, one line each (e.g. a Kafka connector pin it replaced)
        self.notes = list(command.notes)
        self.log_path = command.workdir / command.log_name  #: all launches, appended, with a separator line each
        self.launches: list[Launch] = []
        self.timeline: list[TimelineEvent] = []  #: driver_launched / driver_killed / driver_stopped
        self._process: ManagedProcess | None = None
        self._known_logs: set[str] = set()
        self._progress: SparkProgress | None = None

    def __repr__(self) -> str:
        state = "alive" if self.alive else ("not started" if self._process is None else f"exited {self.returncode}")
        return f"<SparkJob {self.name} launches={len(self.launches)} {state}>"

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> SparkJob:
        """Start the driver (a new launch). Raises :class:`LaunchError` if it is already running."""
        if self.alive:
            raise LaunchError(f"job {self.name} is already running (pid {self.pid}); stop() or kill() it first")
        self._record_end()
        number = len(self.launches) + 1
        self._known_logs = self._event_log_names()
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== streamchaos: launch {number} of {self.name} at {time.strftime('%H:%M:%S')} "
                      f"=====\n".encode())
        role = self.command.role
        self._process = ManagedProcess(self.argv, env=self.env, log_path=self.log_path, cwd=self.workdir,
                                       name=f"{role}:{self.name}", job=True, host=self.host)
        launch = Launch(number=number, started_at=time.time(), pid=self._process.pid)
        self.launches.append(launch)
        self.timeline.append(TimelineEvent(launch.started_at, Kind.of_process(role, "launched"), role,
                                           {"launch": number, "pid": launch.pid}))
        return self

    def restart(self, timeout: float = 30.0) -> SparkJob:
        """Stop the driver if it still runs, then start the same command with the same environment
        (and so the same checkpoint): the query resumes where the checkpoint says."""
        if self.alive:
            self.stop(timeout)
        return self.start()

    def kill(self, timeout: float = 15.0, wait: bool = True) -> None:
        """SIGKILL the driver's whole process group (JVM and Python) and, unless ``wait=False``,
        wait until all are gone (else call :meth:`wait_gone`). ``driver_killed`` is stamped when
        the signal was sent, not after the wait."""
        if self._process is None:
            return
        was_alive = self.alive
        sent = time.time()
        self._process.kill(timeout, wait=wait)
        if was_alive:
            self.timeline.append(TimelineEvent(sent, Kind.of_process(self.command.role, "killed"), self.command.role,
                                               {"launch": len(self.launches), "signal": "SIGKILL"}))
        if wait:
            self._record_end()

    def wait_gone(self, timeout: float = 15.0) -> None:
        """After ``kill(wait=False)``: wait until the driver's group is gone (``TimeoutError``)."""
        if self._process is not None:
            self._process.wait_gone(timeout)
            self._record_end()

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM the driver's group (Spark stops cleanly, closing its event log); SIGKILL whatever
        is left after ``timeout`` seconds. Idempotent."""
        if self._process is None:
            return
        was_alive = self.alive
        self._process.terminate(timeout)
        if was_alive:
            role = self.command.role
            self.timeline.append(TimelineEvent(time.time(), Kind.of_process(role, "stopped"), role,
                                               {"launch": len(self.launches), "returncode": self.returncode}))
        self._record_end()

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the driver's whole process group."""
        if self._process is not None:
            self._process.signal(sig)

    def pause(self, wait: bool = True) -> None:
        """SIGSTOP the driver group (a hung driver: sockets open, nothing answers); ``wait``: until
        every member is stopped (else :meth:`wait_paused`)."""
        if self._process is not None:
            self._process.pause(wait=wait)

    def wait_paused(self, timeout: float = 5.0) -> None:
        """After ``pause(wait=False)``: wait until every member of the driver's group is stopped."""
        if self._process is not None:
            self._process.wait_paused(timeout)

    def resume(self) -> None:
        """SIGCONT the driver group."""
        if self._process is not None:
            self._process.resume()

    # -- state ---------------------------------------------------------------------------------
    @property
    def process(self) -> ManagedProcess | None:
        """The current launch's process (None before the first start)."""
        return self._process

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.alive

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def pgid(self) -> int | None:
        return None if self._process is None else self._process.pgid

    @property
    def returncode(self) -> int | None:
        """The current launch's exit code (negative: killed by that signal), None while running."""
        return None if self._process is None else self._process.returncode

    def wait_for_exit(self, timeout: float) -> int:
        """Wait for the driver to exit and return its exit code; ``TimeoutError`` with the log tail."""
        if self._process is None:
            raise LaunchError(f"job {self.name} was never started; call start() first")
        import subprocess

        try:
            code = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"job {self.name}: driver (pid {self.pid}) still running after {timeout:.0f}s; "
                               f"last log lines:\n{self.tail_log(20)}") from None
        self._record_end()
        return code

    def check(self) -> None:
        """Raise :class:`JobFailed` (with the log tail) if the driver has exited with an error."""
        code = self.returncode
        if code not in (None, 0):
            raise self._failed(f"driver exited with code {code} in launch {len(self.launches)}")

    def _failed(self, what: str) -> JobFailed:
        tail = self.tail_log(40)
        return JobFailed(f"job {self.name} ({self.script}): {what}; full log {self.log_path}; last lines:\n{tail}",
                         self.returncode, tail)

    def tail_log(self, n: int = 40) -> str:
        """The last ``n`` lines of the driver log (all launches share it)."""
        return self._process.tail_log(n) if self._process is not None else ""

    def last_error(self) -> str | None:
        """The exception line of the last Python traceback the current launch's driver logged (what it
        died of, when it exited), or None."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return None
        return last_exception(text.rsplit("\n===== streamchaos: launch ", 1)[-1])

    def driver_pids(self) -> list[int]:
        """PIDs of every live process of the driver's group (spark-submit JVM, Python driver, ...)."""
        return [] if self._process is None else self._process.members()

    # -- Spark-side view -----------------------------------------------------------------------
    def _event_log_names(self) -> set[str]:
        try:
            return {n.removesuffix(".inprogress") for n in os.listdir(self.event_log_dir) if not n.startswith(".")}
        except FileNotFoundError:
            return set()

    @property
    def app_id(self) -> str | None:
        """The Spark application id of the current launch (from its event log file), once it has one."""
        if not self.launches:
            return None
        launch = self.launches[-1]
        if launch.app_id is None:
            new = sorted(self._event_log_names() - self._known_logs)
            if new:
                launch.app_id = new[-1].removeprefix("eventlog_v2_")
        return launch.app_id

    def executors(self) -> list[Executor]:
        """This launch's executors, as the cluster knows them (empty until the app registered)."""
        app = self.app_id
        return [] if app is None else list(self._executors(app))

    def executor_pids(self) -> list[int]:
        """PIDs of this launch's executor JVMs and of their Python workers (empty until the app registered)."""
        return [p for e in self.executors() if e.pid is not None for p in (e.pid, *descendants(e.pid))]

    @property
    def progress(self) -> SparkProgress:
        """The job's :class:`SparkProgress` (event log capture across all launches); call ``poll()``."""
        if self._progress is None:
            self._progress = SparkProgress(self.event_log_dir)
        return self._progress

    def wait_for(self, predicate: Callable[[SparkJob], bool], timeout: float, what: str,
                 interval: float = 0.25) -> None:
        """Poll ``predicate(job)`` until it holds. Raises :class:`JobFailed` (with the log tail) as
        soon as the driver exits, and ``TimeoutError`` naming ``what`` after ``timeout`` seconds."""
        def holds() -> bool:
            if predicate(self):
                return True
            if not self.alive:
                if predicate(self):  # the exit may have produced what we wait for
                    return True
                raise self._failed(f"driver exited with code {self.returncode} while waiting for {what}")
            return False

        poll(holds, timeout, lambda _: TimeoutError(
            f"job {self.name}: timed out after {timeout:.0f}s waiting for {what}; driver alive, "
            f"app {self.app_id}; last log lines:\n{self.tail_log(15)}"), interval=interval)

    def wait_for_query_start(self, timeout: float = 120.0) -> None:
        """Wait until the current launch's streaming query has started (QueryStartedEvent)."""
        def started(job: SparkJob) -> bool:
            job.progress.poll()
            app = job.app_id
            return app is not None and any(
                e.kind == Kind.QUERY_STARTED and QueryStarted.of(e).app_id == app for e in job.progress.timeline)

        self.wait_for(started, timeout, f"the streaming query of launch {len(self.launches)} to start")

    def wait_for_batches(self, n: int, timeout: float = 120.0) -> None:
        """Wait until the current launch has reported ``n`` micro-batch progress events."""
        def enough(job: SparkJob) -> bool:
            job.progress.poll()
            app = job.app_id
            return app is not None and sum(1 for b in job.progress.batches if b["app_id"] == app) >= n

        self.wait_for(enough, timeout, f"{n} micro-batches of launch {len(self.launches)}")

    def _record_end(self) -> None:
        if self.launches and self._process is not None and not self._process.alive:
            launch = self.launches[-1]
            if launch.ended_at is None:
                launch.ended_at = time.time()
                launch.returncode = self._process.returncode
                _ = self.app_id


class WrapsSparkJob:
    """What a job handle wrapping spark-submit's job (``inner``: YARN's, Kubernetes' cluster mode) shares with it:
    its name, script, arguments, folders, conf and notes."""

    inner: SparkJob
    name = property(lambda self: self.inner.name)
    script = property(lambda self: self.inner.script)
    args = property(lambda self: self.inner.args)
    workdir = property(lambda self: self.inner.workdir)
    log_path = property(lambda self: self.inner.log_path)
    event_log_dir = property(lambda self: self.inner.event_log_dir)
    effective_conf = property(lambda self: self.inner.effective_conf)
    notes = property(lambda self: self.inner.notes)


#: an exception line as Python's traceback ends: ``Name: message`` or a bare ``Name`` (dotted allowed)
_EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning)\b(?::.*)?$")


#: how Spark reports a Python worker that died without sending its error back: ``Python worker exited
#: unexpectedly (crashed)``, ``TransformWithStateInPySpark driver worker exited unexpectedly (crashed)``. The
#: worker printed its own error to its stderr, which is the driver's log for the driver's Python workers
CRASHED = "exited unexpectedly (crashed)"


def exception_lines(log_text: str) -> list[str]:
    """The exception line of each Python traceback in a log, in order."""
    lines = log_text.splitlines()
    out = []
    # a traceback may start inside a JVM exception's message (a Python worker's, carried by Spark's
    # "... initialization failed, returned -2. Cause: Traceback (most recent call last):")
    for start in (i for i, line in enumerate(lines) if "Traceback (most recent call last):" in line):
        for line in lines[start + 1:]:
            if not line.strip() or line[0].isspace():
                continue  # the frames and the source lines of the traceback
            if _EXC_LINE.match(line.strip()):
                out.append(line.strip())
            break
    return out


def last_exception(log_text: str) -> str | None:
    """The exception line of the last Python traceback in a driver log (``FileNotFoundError: [Errno 2]
    No such file or directory: 'rates.csv'``), or None when there is none. When it says only that a Python
    worker crashed, the worker's own error (:func:`crashed_worker_error`) is named first."""
    found = exception_lines(log_text)
    return with_worker_error(found[-1], log_text) if found else None


def crashed_worker_error(log_text: str) -> str | None:
    """The error a crashed Python worker printed itself (``ModuleNotFoundError: No module named 'google'``)
    when Spark reported only that it crashed (:data:`CRASHED`): the exception line of the last traceback
    in ``log_text`` that is not a report of the crash. None without a crash or such a traceback."""
    if CRASHED not in log_text:
        return None
    own = [e for e in exception_lines(log_text) if CRASHED not in e]
    return own[-1] if own else None


def with_worker_error(error: str, log_text: str) -> str:
    """``error`` (an exception line, or a query's exception), led by the crashed Python worker's own error
    when ``error`` says only that one crashed and ``log_text`` holds the worker's traceback."""
    worker = crashed_worker_error(log_text) if CRASHED in error else None
    return error if worker is None else f"a Python worker crashed with {worker} (Spark: {error})"
