"""Launch a user's PySpark script on the stack's Spark cluster with ``spark-submit``, kill it whole and
restart it from the same checkpoint.

    launcher = JobLauncher(spark_cluster.master_url, workdir=tmp_path / "jobs")
    job = launcher.submit("pipelines/enrich_at_least_once.py", config=JobConfig(...))
    job.wait_for_query_start(timeout=120)
    job.kill()            # SIGKILL the driver's process group: spark-submit's JVM and the Python driver
    job.restart()         # same command and environment -> resumes from the same checkpoint
    job.stop()            # SIGTERM the group, SIGKILL what is left

Deploy modes: ``client`` (the default) runs the driver here, in its own process group
(:class:`~pytest_streamchaos.stack.process.ManagedProcess`), so it can be killed and restarted.
``cluster`` (``--deploy-mode cluster --supervise``, where the master restarts a dead driver) is refused
for Python applications by spark-submit itself on standalone clusters ("Cluster deploy mode is currently
not supported for python applications on standalone clusters", SparkSubmit), so :class:`JobLauncher`
raises :class:`LaunchError` at once naming the alternative: client mode plus :meth:`SparkJob.restart`
(the plugin's own driver restart).

Every port the driver opens is pinned (allocated by :mod:`pytest_streamchaos.stack.ports`), every
server binds 127.0.0.1, the Spark UI is off (progress comes from the event log, see
:mod:`pytest_streamchaos.observe.progress`), and the event log is a plain JSON-lines file per driver
launch in the job's directory. The conf actually passed is :attr:`SparkJob.effective_conf`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import psutil

from pytest_streamchaos.assets import read_fixture
from pytest_streamchaos.job.config import JobConfig
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.poll import poll
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.spark import connector, job_files
from pytest_streamchaos.stack import cds
from pytest_streamchaos.stack.artifacts import ResolutionError
from pytest_streamchaos.stack.host import current
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.stack.spark_daemons import EXECUTOR_CLASS, jvm_tmp_opts

HOST = "127.0.0.1"

#: Conf every job gets unless the caller overrides it. Small resources for a 2-core machine, quick
#: failure detection (a lost executor is noticed in seconds, not the default 120 s), and what the
#: progress capture needs.
DEFAULT_CONF: dict[str, str] = {
    "spark.executor.memory": "512m",
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.python.worker.reuse": "true",
    # Failure detection: the driver declares an executor dead after spark.network.timeout without a
    # heartbeat (sent every spark.executor.heartbeatInterval, which must stay well below it).
    "spark.network.timeout": "20s",
    "spark.executor.heartbeatInterval": "2s",
    # How often the driver checks for expired heartbeats; Spark requires it <= spark.network.timeout.
    "spark.network.timeoutInterval": "5s",
    "spark.ui.enabled": "false",
    "spark.eventLog.enabled": "true",
    # Spark 4 defaults to zstd-compressed rolling logs, which cannot be read while written.
    "spark.eventLog.compress": "false",
    "spark.eventLog.rolling.enabled": "false",
    "spark.sql.streaming.metricsEnabled": "false",
    # workers forked with pyarrow, the Kafka client and the plugin's source already imported
    # (job/daemon.py): the first micro-batch after a start or an executor restart is seconds faster
    "spark.python.daemon.module": "pytest_streamchaos.job.daemon",
}

_SUBMIT_PYTHON_CLUSTER_MSG = (
    "Cluster deploy mode is currently not supported for python applications on standalone clusters")


class LaunchError(RuntimeError):
    """The job cannot be launched as asked (missing script, unsupported mode, no Java). The message
    names the problem and the fix."""


class JobFailed(RuntimeError):
    """The driver exited with an error (or while it was expected to run). Carries the log tail."""

    def __init__(self, message: str, returncode: int | None = None, log_tail: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.log_tail = log_tail


def spark_home() -> Path:
    """``$SPARK_HOME`` for spark-submit: the installed ``pyspark`` package directory."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-submit").is_file():
        raise LaunchError(f"{home}/bin/spark-submit not found; reinstall pyspark "
                          "(pip install --force-reinstall pyspark)")
    return home


def _java_ok(env: Mapping[str, str]) -> bool:
    java = _java_path(env)
    return java is not None and os.access(java, os.X_OK)


def _java_path(env: Mapping[str, str]) -> str | None:
    """The java binary spark-submit will run (what the CDS archives are keyed by)."""
    java_home = env.get("JAVA_HOME")
    if java_home:
        return os.path.join(java_home, "bin", "java")
    return shutil.which("java", path=env.get("PATH"))


def _repo_root() -> Path:
    """The directory that holds the ``pytest_streamchaos`` package (so jobs can import it)."""
    return Path(__file__).resolve().parents[2]


class _JobDirs(NamedTuple):
    """A job's directory and what :meth:`JobLauncher.prepare` makes in it."""

    job: Path
    event: Path  # the event logs
    local: Path  # spark.local.dir and the JVMs' java.io.tmpdir
    log4j: Path  # log4j2.properties


def _check_script(script: str | os.PathLike, deploy_mode: str) -> Path:
    """The resolved path of the job's script; :class:`LaunchError` when it is not an existing ``.py``
    file or ``deploy_mode`` is not usable (see the module docstring for why not ``cluster``)."""
    script_path = Path(script).resolve()
    if not script_path.is_file():
        raise LaunchError(f"job script {script_path} does not exist (or is not a file); pass the path of "
                          "your PySpark script, relative to the current directory or absolute")
    if script_path.suffix != ".py":
        raise LaunchError(f"job script {script_path} is not a .py file; JobLauncher runs PySpark scripts only")
    if deploy_mode not in ("client", "cluster"):
        raise LaunchError(f"deploy_mode={deploy_mode!r}: use 'client' (default) or 'cluster'")
    if deploy_mode == "cluster":
        raise LaunchError(
            f"deploy_mode='cluster' is not possible for {script_path.name}: spark-submit refuses Python "
            f"applications in cluster mode on standalone clusters (SparkSubmit: \"{_SUBMIT_PYTHON_CLUSTER_MSG}\"),"
            " so the master's --supervise driver restart is unavailable. Use deploy_mode='client' (the "
            "default): the driver runs in its own process group here, and job.restart() restarts a killed "
            "driver from the same checkpoint")
    return script_path


def _job_pythonpath(script_path: Path) -> str:
    """PYTHONPATH for the driver and executors: this package's root, the script's directory, then ours."""
    repo = str(_repo_root())
    return os.pathsep.join(dict.fromkeys(
        p for p in [repo, str(script_path.parent), os.environ.get("PYTHONPATH", "")] if p))


#: C1 only: the JIT mode ``quick`` (docs/architecture.md, "Start-up")
QUICK_JIT = "-XX:TieredStopAtLevel=1"
JIT_MODES = ("quick", "full")


def _add_java_options(effective: dict[str, str], *, dirs: _JobDirs, home: Path, java_env: Mapping[str, str],
                      jit: str = "quick") -> None:
    """Complete the driver's and executors' ``extraJavaOptions`` in ``effective``: the driver's log4j2
    configuration (by -D), the JVMs' scratch files in the job's directory (see
    stack.spark_daemons.jvm_tmp_opts), Spark's classes mapped from the machine's CDS archives when they
    match (stack.cds), and C1 only when ``jit`` is ``quick`` and the job chose no tiering of its own."""
    java = _java_path(java_env)
    cds_opts = {"spark.driver.extraJavaOptions": cds.java_opts(
                    "driver", java, home, effective.get("spark.driver.extraClassPath", "")) if java else "",
                "spark.executor.extraJavaOptions": cds.java_opts(
                    "executor", java, home, effective.get("spark.executor.extraClassPath", "")) if java else ""}
    effective["spark.driver.extraJavaOptions"] = (f"{effective.get('spark.driver.extraJavaOptions', '')} "
                                                  f"-Dlog4j2.configurationFile={dirs.log4j.as_uri()}")
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        own = effective.get(key, "")
        quick = QUICK_JIT if jit == "quick" and "Tiered" not in own else ""
        effective[key] = " ".join(p for p in (own, jvm_tmp_opts(dirs.local), cds_opts[key], quick) if p)


@dataclass
class Launch:
    """One start of the driver."""

    number: int
    started_at: float
    pid: int
    ended_at: float | None = None
    returncode: int | None = None
    app_id: str | None = None


class SparkJob:
    """One user job: a fixed spark-submit command and environment that can be started, killed and
    restarted any number of times. Created by :meth:`JobLauncher.prepare` / :meth:`JobLauncher.submit`.
    """

    def __init__(
        self,
        *,
        name: str,
        script: Path,
        argv: list[str],
        env: dict[str, str],
        workdir: Path,
        effective_conf: dict[str, str],
        event_log_dir: Path,
        deploy_mode: str = "client",
        notes: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.script = script
        self.argv = argv
        self.env = env
        self.workdir = workdir
        self.effective_conf = effective_conf  #: every ``--conf`` passed to spark-submit
        self.event_log_dir = event_log_dir
        self.deploy_mode = deploy_mode
        #: what the launcher changed about the job, one line each (e.g. a Kafka connector pin it replaced)
        self.notes = list(notes)
        self.log_path = workdir / "driver.log"  #: all launches, appended, with a separator line each
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
        self._process = ManagedProcess(self.argv, env=self.env, log_path=self.log_path, cwd=self.workdir,
                                       name=f"driver:{self.name}", job=True)
        launch = Launch(number=number, started_at=time.time(), pid=self._process.pid)
        self.launches.append(launch)
        self.timeline.append(TimelineEvent(launch.started_at, "driver_launched", "driver",
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
            self.timeline.append(TimelineEvent(sent, "driver_killed", "driver",
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
            self.timeline.append(TimelineEvent(time.time(), "driver_stopped", "driver",
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
        try:
            code = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(
                f"job {self.name}: driver (pid {self.pid}) still running after {timeout:.0f}s; "
                f"last log lines:\n{self.tail_log(20)}"
            ) from None
        self._record_end()
        return code

    def check(self) -> None:
        """Raise :class:`JobFailed` (with the log tail) if the driver has exited with an error."""
        code = self.returncode
        if code not in (None, 0):
            tail = self.tail_log(40)
            raise JobFailed(
                f"job {self.name} ({self.script}): driver exited with code {code} in launch "
                f"{len(self.launches)}; full log {self.log_path}; last lines:\n{tail}", code, tail)

    def tail_log(self, n: int = 40) -> str:
        """The last ``n`` lines of the driver log (all launches share it)."""
        if self._process is not None:
            return self._process.tail_log(n)
        return ""

    def last_error(self) -> str | None:
        """The exception line of the last Python traceback the current launch's driver logged (what it
        died of, when it exited), or None."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return None
        return job_files.last_exception(text.rsplit("\n===== streamchaos: launch ", 1)[-1])

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

    def executor_pids(self) -> list[int]:
        """PIDs of this launch's executors (``CoarseGrainedExecutorBackend --app-id <app_id>`` JVMs,
        children of the worker JVMs) and of their Python workers. Empty until the app registered."""
        app = self.app_id
        if app is None:
            return []
        # the local cluster's executors are workers' children, so in the job group: look there, and on the
        # whole host only where they are not (executors in containers, a host without the group)
        group = current().isolating_group()
        members = group.members() if group is not None else []
        found = _executors_of(app, _processes(members)) if members else []
        return found or _executors_of(app, psutil.process_iter())

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
                code = self.returncode
                tail = self.tail_log(40)
                raise JobFailed(
                    f"job {self.name} ({self.script}): driver exited with code {code} while waiting for "
                    f"{what}; full log {self.log_path}; last lines:\n{tail}", code, tail)
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
                e.kind == "query_started" and e.detail.get("app_id") == app for e in job.progress.timeline)

        self.wait_for(started, timeout, f"the streaming query of launch {len(self.launches)} to start")

    def wait_for_batches(self, n: int, timeout: float = 120.0) -> None:
        """Wait until the current launch has reported ``n`` micro-batch progress events."""
        def enough(job: SparkJob) -> bool:
            job.progress.poll()
            app = job.app_id
            return app is not None and sum(1 for b in job.progress.batches if b["app_id"] == app) >= n

        self.wait_for(enough, timeout, f"{n} micro-batches of launch {len(self.launches)}")

    # -- internals -----------------------------------------------------------------------------
    def _record_end(self) -> None:
        if self.launches and self._process is not None and not self._process.alive:
            launch = self.launches[-1]
            if launch.ended_at is None:
                launch.ended_at = time.time()
                launch.returncode = self._process.returncode
                _ = self.app_id


def _processes(pids: Iterable[int]) -> Iterator[psutil.Process]:
    for pid in pids:
        try:
            yield psutil.Process(pid)
        except psutil.Error:  # gone meanwhile
            continue


def _executors_of(app: str, procs: Iterable[psutil.Process]) -> list[int]:
    """PIDs of the executor JVMs of application ``app`` among ``procs``, and of their children."""
    pids: list[int] = []
    for p in procs:
        try:
            cmd = p.cmdline()
        except psutil.Error:
            continue
        if EXECUTOR_CLASS in cmd and app in cmd:
            pids.append(p.pid)
            try:
                pids.extend(c.pid for c in p.children(recursive=True))
            except psutil.Error:
                pass
    return pids


class DriverSupervisor:
    """What ``spark-submit --supervise`` does for a driver in cluster mode, for the client-mode driver
    here (Spark refuses cluster mode for Python on standalone clusters): a driver that exited on its
    own is started again from its checkpoint after ``delay`` seconds, at most ``max_restarts`` times.
    Production jobs have this from their scheduler (YARN attempts, a Kubernetes restart policy, a job
    service's retries). Every exit is recorded (``driver_exited``) whether or not it is restarted;
    a driver a fault stopped is left to that fault (``hold()`` true)."""

    def __init__(self, job: SparkJob, record: Callable[..., Any], *, enabled: bool, hold: Callable[[], bool],
                 delay: float = 1.0, max_restarts: int = 10) -> None:
        self.job, self.record, self.enabled, self.hold = job, record, enabled, hold
        self.delay, self.max_restarts = delay, max_restarts
        self.restarts = 0
        self._down_since: float | None = None

    def will_restart(self) -> bool:
        """Whether a driver that is down now will be started again (by this supervisor or a fault)."""
        return self.hold() or (self.enabled and self.restarts < self.max_restarts)

    def check(self) -> None:
        """Call often: notes an exit, and restarts the driver once it has been down ``delay`` seconds."""
        job = self.job
        if job.alive or job.process is None or job.returncode is None:
            self._down_since = None
            return
        now = time.time()
        if self._down_since is None:
            self._down_since = now
            self.record("driver_exited", "driver", code=job.returncode)
            return
        if (self.enabled and not self.hold() and now - self._down_since >= self.delay
                and self.restarts < self.max_restarts):
            self.restarts += 1
            self._down_since = None
            job.start()


class JobLauncher:
    """Builds and starts :class:`SparkJob` s against one Spark master.

    ``workdir`` holds one directory per job (driver log, event logs, Spark scratch space).
    ``conf`` is merged over :data:`DEFAULT_CONF` for every job; per-job ``conf`` merges over that.
    """

    def __init__(
        self,
        master_url: str,
        workdir: str | os.PathLike,
        *,
        conf: Mapping[str, Any] | None = None,
        python: str | None = None,
        java_home: str | None = None,
        driver_host: str = HOST,
        jit: str = "quick",
        progress: Callable[[str], None] | None = None,
    ) -> None:
        """``driver_host``: the address the driver binds, where the cluster's executors reach it
        (127.0.0.1 for the local cluster; the host's address on the containers' network for docker).
        ``jit``: ``quick`` runs the driver's and executors' JVMs with C1 only, ``full`` with the JVM's
        default tiered compilation (see :data:`QUICK_JIT`). ``progress``: where a line goes while Spark's
        Kafka connector is resolved (once per machine)."""
        if jit not in JIT_MODES:
            raise LaunchError(f"jit={jit!r}: use one of {JIT_MODES}")
        if not (master_url.startswith("spark://") or master_url.startswith("local")):
            raise LaunchError(f"master URL {master_url!r} is not spark://host:port (or local[...])")
        self.master_url = master_url
        self.workdir = Path(workdir)
        self.conf = {k: str(v) for k, v in (conf or {}).items()}
        self.python = python or sys.executable
        self.java_home = java_home
        self.driver_host = driver_host
        self.jit = jit
        self.progress = progress
        self.jobs: list[SparkJob] = []

    @classmethod
    def for_cluster(cls, cluster: Any, workdir: str | os.PathLike, **kwargs: Any) -> JobLauncher:
        """A launcher for a :class:`~pytest_streamchaos.stack.base.SparkCluster` (its master URL, and the
        address its executors reach a driver at)."""
        kwargs.setdefault("driver_host", getattr(cluster, "driver_host", HOST))
        return cls(cluster.master_url, workdir, **kwargs)

    def prepare(
        self,
        script: str | os.PathLike,
        *,
        config: JobConfig | Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        conf: Mapping[str, Any] | None = None,
        deploy_mode: str = "client",
        name: str | None = None,
        args: Sequence[str] = (),
        py_files: Sequence[str | os.PathLike] = (),
        files: Sequence[str | os.PathLike] = (),
    ) -> SparkJob:
        """Validate everything and build the job without starting it.

        ``config``: the STREAMCHAOS_* job contract (a :class:`JobConfig` or its env dict).
        ``env``: extra environment variables for the driver. ``conf``: Spark conf over the defaults.
        ``files`` / ``py_files``: the job's own data files and Python files, as ``spark-submit --files /
        --py-files`` take them (relative: to the script's folder); data files are also copied into the
        driver's working directory (:mod:`.job_files`).
        """
        script_path = _check_script(script, deploy_mode)
        try:
            data = job_files.resolve("files", files, [script_path.parent, Path.cwd()])
            py = job_files.resolve("py_files", py_files, [script_path.parent, Path.cwd()])
        except ValueError as exc:
            raise LaunchError(str(exc)) from None
        home = spark_home()
        java_env = self._java_env()
        # before any directory is made: no connector (resolution failed) fails here, cleanly
        jars, notes = self._kafka_connector(home, script_path, conf or {}, java_env)
        name = name or script_path.stem
        dirs = self._make_dirs(name)
        job_files.stage_files(data, dirs.job)
        py = job_files.ship_py_files(py, dirs.job)
        pythonpath = _job_pythonpath(script_path)
        effective = self._effective_conf(conf, name=name, dirs=dirs, pythonpath=pythonpath, jars=jars,
                                         home=home, java_env=java_env)
        child_env = self._child_env(home=home, pythonpath=pythonpath, config=config, env=env)
        argv = self._submit_argv(home=home, deploy_mode=deploy_mode, name=name, script_path=script_path,
                                 effective=effective, py_files=py, files=[f for f in data if f.is_file()],
                                 args=args)
        job = SparkJob(name=name, script=script_path, argv=argv, env=child_env, workdir=dirs.job,
                       effective_conf=effective, event_log_dir=dirs.event, deploy_mode=deploy_mode, notes=notes)
        self.jobs.append(job)
        return job

    def _kafka_connector(self, home: Path, script: Path, conf: Mapping[str, Any],
                         java_env: Mapping[str, str]) -> tuple[list[Path], list[str]]:
        """Spark's Kafka connector of this pyspark (:mod:`.connector`) and a note when the job pins another."""
        try:
            jars = connector.connector_jars(home, self.progress, java=_java_path(java_env))
        except ResolutionError as exc:
            raise LaunchError(str(exc)) from None
        ours = connector.connector(home).coordinates[0]
        conf = {k: str(v) for k, v in conf.items()}
        notes = [connector.replacement_note(connector.find_pins(script, conf), ours),
                 connector.companions_note(conf.get("spark.jars.packages", ""))]
        return jars, [n for n in notes if n]

    def _java_env(self) -> dict[str, str]:
        """The environment spark-submit's java is looked up in (``java_home`` over ``os.environ``);
        :class:`LaunchError` when it has no java."""
        java_env = dict(os.environ, **({"JAVA_HOME": self.java_home} if self.java_home else {}))
        if not _java_ok(java_env):
            raise LaunchError("no java found for spark-submit: set JAVA_HOME (or --chaos-java-home) or put java "
                              "on PATH (Java 17 or 21)")
        return java_env

    def _make_dirs(self, name: str) -> _JobDirs:
        """Make the job's directory (event log, Spark scratch space) and write its log4j2 configuration."""
        job_dir = self._job_dir(name)
        event_dir = job_dir / "eventlog"
        event_dir.mkdir(parents=True)
        local_dir = job_dir / "local"
        local_dir.mkdir()
        log4j = job_dir / "log4j2.properties"  # by -D, not on the class path: see stack.cds.conf_dir
        log4j.write_text(_LOG4J2)
        return _JobDirs(job=job_dir, event=event_dir, local=local_dir, log4j=log4j)

    def _effective_conf(self, conf: Mapping[str, Any] | None, *, name: str, dirs: _JobDirs, pythonpath: str,
                        jars: Sequence[Path], home: Path, java_env: Mapping[str, str]) -> dict[str, str]:
        """The Spark conf passed to spark-submit: :data:`DEFAULT_CONF`, the job's pinned ports and
        directories, the launcher's ``conf``, the job's ``conf``; then Spark's Kafka connector in
        ``spark.jars`` (a connector pinned in ``spark.jars.packages`` taken out), the JVM options, and a
        UI port if the UI was turned on without one."""
        effective = dict(DEFAULT_CONF)
        effective.update(self._job_conf(name, dirs, pythonpath))
        effective.update(self.conf)
        effective.update({k: str(v) for k, v in (conf or {}).items()})
        effective["spark.jars"] = ",".join(p for p in (*map(str, jars), effective.get("spark.jars", "")) if p)
        if "spark.jars.packages" in effective:
            packages = connector.without_pins(effective.pop("spark.jars.packages"))
            if packages:
                effective["spark.jars.packages"] = packages
        _add_java_options(effective, dirs=dirs, home=home, java_env=java_env, jit=self.jit)
        if effective.get("spark.ui.enabled", "false").lower() == "true" and "spark.ui.port" not in effective:
            effective["spark.ui.port"] = str(current().ports.free())
        return effective

    def _job_conf(self, name: str, dirs: _JobDirs, pythonpath: str) -> dict[str, str]:
        """This job's own conf: its name, loopback-only driver with pinned ports (allocated here, in this
        order), event log and scratch directories, and the Python it runs."""
        conf = {
            "spark.app.name": name,
            "spark.driver.host": self.driver_host,
            "spark.driver.bindAddress": self.driver_host,
            "spark.driver.port": str(current().ports.free()),
            "spark.driver.blockManager.port": str(current().ports.free()),
            # Executors start at this port and count up (spark.port.maxRetries) when several share a host.
            "spark.blockManager.port": str(current().ports.free()),
            "spark.eventLog.dir": dirs.event.as_uri(),
            "spark.local.dir": str(dirs.local),
            "spark.pyspark.python": self.python,
            "spark.pyspark.driver.python": self.python,
            "spark.executorEnv.PYTHONPATH": pythonpath,
        }
        if self.driver_host == HOST:  # executors on this host: loopback too (in a container: their own address)
            conf["spark.executorEnv.SPARK_LOCAL_IP"] = HOST
        return conf

    def _child_env(self, *, home: Path, pythonpath: str, config: JobConfig | Mapping[str, str] | None,
                   env: Mapping[str, str] | None) -> dict[str, str]:
        """spark-submit's environment: ours without what would override the job's Spark settings, plus
        Spark's and Python's settings, ``java_home``, the job contract (``config``) and ``env``, in that
        order of precedence (last wins)."""
        child_env = {k: v for k, v in os.environ.items()
                     if k not in ("PYSPARK_SUBMIT_ARGS", "PYSPARK_DRIVER_PYTHON_OPTS", "SPARK_CONF_DIR")}
        child_env.update({
            "SPARK_HOME": str(home),
            "SPARK_CONF_DIR": str(cds.conf_dir()),
            "SPARK_LOCAL_IP": self.driver_host,
            "PYSPARK_PYTHON": self.python,
            "PYSPARK_DRIVER_PYTHON": self.python,
            "PYTHONPATH": pythonpath,
            "SPARK_LAUNCHER_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",  # spark-class's helper JVM
            "PYTHONUNBUFFERED": "1",  # so the log shows the job's prints in order with Spark's lines
        })
        if self.java_home:
            child_env["JAVA_HOME"] = self.java_home
        if isinstance(config, JobConfig):
            child_env.update(config.to_env())
        elif config is not None:
            child_env.update({k: str(v) for k, v in config.items()})
        child_env.update({k: str(v) for k, v in (env or {}).items()})
        return child_env

    def _submit_argv(self, *, home: Path, deploy_mode: str, name: str, script_path: Path,
                     effective: Mapping[str, str], py_files: Sequence[str | os.PathLike],
                     args: Sequence[str], files: Sequence[Path] = ()) -> list[str]:
        """The spark-submit command line: master, deploy mode, name, ``--py-files``, ``--files``, every
        conf entry, then the script and its arguments."""
        argv = [str(home / "bin" / "spark-submit"), "--master", self.master_url, "--deploy-mode", deploy_mode,
                "--name", name]
        if py_files:
            argv += ["--py-files", ",".join(str(Path(p).resolve()) for p in py_files)]
        if files:
            argv += ["--files", ",".join(str(f) for f in files)]
        for k, v in effective.items():
            argv += ["--conf", f"{k}={v}"]
        argv += [str(script_path), *map(str, args)]
        return argv

    def submit(self, script: str | os.PathLike, **kwargs: Any) -> SparkJob:
        """:meth:`prepare` and start the job (see there for the arguments)."""
        return self.prepare(script, **kwargs).start()

    def stop_all(self, timeout: float = 30.0) -> None:
        """Stop every job this launcher started. Errors of one job do not keep the others running."""
        errors = []
        for job in self.jobs:
            try:
                job.stop(timeout)
            except Exception as exc:  # keep stopping the rest
                errors.append(f"{job.name}: {exc}")
        if errors:
            raise RuntimeError("could not stop every job: " + "; ".join(errors))

    def _job_dir(self, name: str) -> Path:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for i in range(1, 1000):
            d = self.workdir / (name if i == 1 else f"{name}-{i}")
            try:
                d.mkdir()
                return d
            except FileExistsError:
                continue
        raise LaunchError(f"too many jobs named {name!r} in {self.workdir}")


# Spark's INFO output per micro-batch is large; keep WARN, plus the lines that say what the cluster did
# with the application (its id, executors added/removed).
_LOG4J2 = read_fixture("spark", "log4j2.properties")

__all__ = ["DEFAULT_CONF", "DriverSupervisor", "JobFailed", "JobLauncher", "Launch", "LaunchError", "SparkJob",
           "spark_home"]
