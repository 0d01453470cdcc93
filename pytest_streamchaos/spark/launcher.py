"""Launch a user's PySpark script on a cluster of the stack, kill it whole and restart it from the same
checkpoint.

    launcher = JobLauncher.for_cluster(spark_cluster, tmp_path / "jobs")
    job = launcher.submit("pipelines/enrich_at_least_once.py", config=JobConfig(...))
    job.wait_for_query_start(timeout=120)
    job.kill()            # SIGKILL the driver's process group: spark-submit's JVM and the Python driver
    job.restart()         # same command and environment -> resumes from the same checkpoint
    job.stop()            # SIGTERM the group, SIGKILL what is left

What a job is -- its script, its own files, its conf, and Spark's own Kafka connector for the installed
pyspark (:mod:`.connector`) -- is decided here, the same for every backend, into a
:class:`~pytest_streamchaos.stack.base.SparkApp`. Where and how its driver runs is the cluster's: each
backend hands out its own launcher (``SparkCluster.launcher``; the Spark standalone cluster's is
:mod:`pytest_streamchaos.stack.driver`: ``spark-submit`` in client mode on this host, the driver in its own
process group), and its handle (a :class:`~pytest_streamchaos.stack.base.JobHandle`) is what the runner
and the faults drive.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_streamchaos.errors import LaunchError
from pytest_streamchaos.job.config import JobConfig
from pytest_streamchaos.machine.artifacts import ResolutionError
from pytest_streamchaos.machine.ports import HOST
from pytest_streamchaos.spark import connector, delta, job_code, job_files, s3a
from pytest_streamchaos.stack.base import JobHandle, Launcher, LaunchOptions, SparkApp, SparkCluster
from pytest_streamchaos.stack.driver.conf import DEFAULT_CONF, JIT_MODES, QUICK_JIT, java_env, java_path, spark_home
from pytest_streamchaos.stack.driver.job import JobFailed
from pytest_streamchaos.stack.driver.launcher import DriverSite, SubmitLauncher
from pytest_streamchaos.stack.host import current


def check_script(script: str | os.PathLike) -> Path:
    """The resolved path of the job's script; :class:`LaunchError` when it is not an existing ``.py`` file."""
    path = Path(script).resolve()
    if not path.is_file():
        raise LaunchError(f"job script {path} does not exist (or is not a file); pass the path of "
                          "your PySpark script, relative to the current directory or absolute")
    if path.suffix != ".py":
        raise LaunchError(f"job script {path} is not a .py file; JobLauncher runs PySpark scripts only")
    return path


class JobLauncher:
    """Builds and starts the user's jobs on one cluster through its ``launcher`` (a
    :class:`~pytest_streamchaos.stack.base.Launcher`). ``conf`` is merged over the launcher's defaults
    for every job; per-job ``conf`` merges over that. ``progress``: where a line goes while Spark's Kafka
    connector is resolved (once per machine)."""

    def __init__(self, launcher: Launcher, *, conf: Mapping[str, Any] | None = None, java_home: str | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        self.launcher = launcher
        self.conf = {k: str(v) for k, v in (conf or {}).items()}
        self.java_home = java_home
        self.progress = progress
        self.jobs: list[JobHandle] = []

    @classmethod
    def for_cluster(cls, cluster: SparkCluster, workdir: str | os.PathLike, *, java_home: str | None = None,
                    jit: str = "quick", progress: Callable[[str], None] | None = None,
                    conf: Mapping[str, Any] | None = None) -> JobLauncher:
        """A launcher of jobs on ``cluster`` (its own launcher: where the driver runs, how its executors are
        found), one directory per job under ``workdir``. ``jit``: ``quick`` runs the driver's and executors'
        JVMs with C1 only, ``full`` with the JVM's default tiered compilation (:data:`QUICK_JIT`)."""
        if jit not in JIT_MODES:
            raise LaunchError(f"jit={jit!r}: use one of {JIT_MODES}")
        return cls(cluster.launcher(workdir, LaunchOptions(java_home=java_home, jit=jit)), conf=conf,
                   java_home=java_home, progress=progress)

    @classmethod
    def for_master(cls, master_url: str, workdir: str | os.PathLike, *, java_home: str | None = None,
                   jit: str = "quick", progress: Callable[[str], None] | None = None,
                   conf: Mapping[str, Any] | None = None, driver_host: str = HOST) -> JobLauncher:
        """A launcher for a standalone cluster known only by its master URL (one the plugin did not start:
        its executors are not known, so ``executor_pids()`` stays empty); ``driver_host``: the address the
        driver binds for the executors to reach it."""
        site = DriverSite(master_url=master_url, driver_host=driver_host, host=current())
        return cls(SubmitLauncher(site, workdir, LaunchOptions(java_home=java_home, jit=jit)), conf=conf,
                   java_home=java_home, progress=progress)

    @property
    def defaults(self) -> dict[str, str]:
        """The Spark conf every job gets under its own: the launcher's defaults, then this one's ``conf``."""
        return {**self.launcher.defaults, **self.conf}

    def prepare(self, script: str | os.PathLike, *, config: JobConfig | Mapping[str, str] | None = None,
                env: Mapping[str, str] | None = None, conf: Mapping[str, Any] | None = None,
                deploy_mode: str = "client", name: str | None = None, args: Sequence[str] = (),
                py_files: Sequence[str | os.PathLike] = (), files: Sequence[str | os.PathLike] = (),
                outputs: Sequence[str] = ()) -> JobHandle:
        """Validate everything and build the job without starting it.

        ``config``: the STREAMCHAOS_* job contract (a :class:`JobConfig` or its env dict).
        ``env``: extra environment variables for the driver. ``conf``: Spark conf over the defaults.
        ``files`` / ``py_files``: the job's own data files and Python files, as ``spark-submit --files /
        --py-files`` take them (relative: to the script's folder); data files are also copied into the
        driver's working directory (:mod:`.job_files`). ``outputs``: the run's output names (a ``delta:``
        one means the job needs Delta Lake's jars, :mod:`.delta`; an ``s3a://`` one S3A's, :mod:`.s3a`).
        """
        script_path = check_script(script)
        try:
            data = job_files.resolve("files", files, [script_path.parent, Path.cwd()])
            py = job_files.resolve("py_files", py_files, [script_path.parent, Path.cwd()])
        except ValueError as exc:
            raise LaunchError(str(exc)) from None
        own = {k: str(v) for k, v in (conf or {}).items()}
        # before any directory is made: no connector (resolution failed) fails here, cleanly
        jars, notes = self._kafka_connector(script_path, own)
        app_conf = {**self.conf, **own}
        sources = job_code.job_sources(script_path, py)
        delta_jars, delta_notes = self._delta(sources, app_conf, outputs)
        jars, notes = [*jars, *delta_jars, *self._s3a(sources, app_conf, outputs)], [*notes, *delta_notes]
        if "spark.jars.packages" in app_conf:
            packages = delta.without_pins(connector.without_pins(app_conf.pop("spark.jars.packages")))
            if packages:
                app_conf["spark.jars.packages"] = packages
        contract = config.to_env() if isinstance(config, JobConfig) else {k: str(v) for k, v in (config or {}).items()}
        app = SparkApp(script=script_path, name=name or script_path.stem, args=tuple(map(str, args)), conf=app_conf,
                       env={**contract, **{k: str(v) for k, v in (env or {}).items()}}, jars=tuple(jars),
                       files=tuple(data), py_files=tuple(py), deploy_mode=deploy_mode, notes=tuple(notes))
        job = self.launcher.prepare(app)
        self.jobs.append(job)
        return job

    def _kafka_connector(self, script: Path, conf: Mapping[str, str]) -> tuple[list[Path], list[str]]:
        """Spark's Kafka connector of this pyspark (:mod:`.connector`) and a note when the job pins another."""
        home = spark_home()
        java = java_path(java_env(self.java_home))
        try:
            jars = connector.connector_jars(home, self.progress, java=java)
        except ResolutionError as exc:
            raise LaunchError(str(exc)) from None
        ours = connector.connector(home).coordinates[0]
        conf = {k: str(v) for k, v in conf.items()}
        notes = [connector.fallback_note(home), connector.replacement_note(connector.find_pins(script, conf), ours),
                 connector.companions_note(conf.get("spark.jars.packages", ""))]
        return jars, [n for n in notes if n]

    def _delta(self, sources: list[Path], conf: dict[str, str], outputs: Sequence[str]) -> tuple[list[Path], list[str]]:
        """Delta Lake's jars for a job that needs them (:mod:`.delta`), with Delta's session settings and its
        snapshot partitions (as many as the shuffle's) added to ``conf`` where the job sets none, and the notes
        on its pins; nothing for a job that does not."""
        if delta.needs_delta(sources, conf, outputs) is None:
            return [], []
        home = spark_home()
        try:
            chosen = delta.choice(home)
            jars = delta.delta_jars(home, self.progress, java=java_path(java_env(self.java_home)))
        except ResolutionError as exc:
            raise LaunchError(str(exc)) from None
        missing = delta.python_api_missing(sources, chosen)
        if missing:
            raise LaunchError(missing)
        for key, value in delta.SESSION_CONF.items():
            conf.setdefault(key, value)
        conf.setdefault(delta.SNAPSHOT_PARTITIONS, {**self.defaults, **conf}.get("spark.sql.shuffle.partitions", "2"))
        notes = [chosen.note, delta.replacement_note(delta.find_pins(sources, conf), chosen.coordinate)]
        return jars, [n for n in notes if n]

    def _s3a(self, sources: list[Path], conf: dict[str, str], outputs: Sequence[str]) -> list[Path]:
        """S3A's jars (``hadoop-aws`` of pyspark's Hadoop, :mod:`.s3a`) for a job that names ``s3a://`` paths or
        is given S3A's settings (the run's object store); none for another."""
        if not s3a.needs_s3a(sources, conf, outputs):
            return []
        try:
            return s3a.s3a_jars(spark_home(), self.progress, java=java_path(java_env(self.java_home)))
        except ResolutionError as exc:
            raise LaunchError(str(exc)) from None

    def submit(self, script: str | os.PathLike, **kwargs: Any) -> JobHandle:
        """:meth:`prepare` and start the job (see there for the arguments)."""
        job = self.prepare(script, **kwargs)
        job.start()
        return job

    def stop_all(self, timeout: float = 30.0) -> None:
        """Stop every job this launcher started (the cluster's launcher does). Errors of one job do not keep
        the others running."""
        self.launcher.stop_all(timeout)


__all__ = ["DEFAULT_CONF", "QUICK_JIT", "JobFailed", "JobLauncher", "LaunchError", "check_script", "spark_home"]
