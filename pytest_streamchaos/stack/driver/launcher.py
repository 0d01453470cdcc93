"""Launch drivers on this host for one cluster: ``spark-submit --master <the cluster>`` in client mode,
each in a process group of its own in the job's group, so it can be killed and restarted.

Deploy modes: ``client`` runs the driver here. ``cluster`` (``--deploy-mode cluster --supervise``, where the
master restarts a dead driver) is refused for Python applications by spark-submit itself on standalone
clusters ("Cluster deploy mode is currently not supported for python applications on standalone
clusters", SparkSubmit), so a standalone cluster's :class:`SubmitLauncher` raises :class:`LaunchError` at
once naming the alternative: client mode plus the driver's restart (``SparkJob.restart``). A cluster
manager that runs Python drivers in cluster mode (YARN) brings a launcher of its own.

Every port the driver opens is pinned (allocated from the session's host), the Spark UI is off
(progress comes from the event log, :mod:`pytest_streamchaos.observe.progress`), and the event log is a
plain JSON-lines file per driver launch in the job's directory. The conf actually passed is
:attr:`SparkJob.effective_conf`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_streamchaos.errors import LaunchError
from pytest_streamchaos.stack.base import Executor, JobHandle, LaunchOptions, SparkApp
from pytest_streamchaos.stack.driver import command, conf
from pytest_streamchaos.stack.driver.job import JobCommand, SparkJob
from pytest_streamchaos.stack.host import Host

_SUBMIT_PYTHON_CLUSTER_MSG = (
    "Cluster deploy mode is currently not supported for python applications on standalone clusters")


@dataclass(frozen=True)
class DriverSite:
    """What a cluster tells its launcher: where drivers submit to (``master_url``), the address a driver
    on this host binds so that the executors reach it, the session's host (ports, the job's group), and
    how the executors of an application are found (the cluster's own knowledge)."""

    master_url: str
    driver_host: str
    host: Host
    executors: Callable[[str], Sequence[Executor]] = field(default=lambda app: [])
    #: the deploy modes this cluster runs a Python driver in
    deploy_modes: tuple[str, ...] = ("client",)


class SubmitLauncher:
    """Builds and starts :class:`SparkJob` s on one cluster (:class:`~..base.Launcher`). ``workdir`` holds one
    directory per job (driver log, event logs, Spark scratch space)."""

    def __init__(self, site: DriverSite, workdir: str | os.PathLike, options: LaunchOptions | None = None) -> None:
        options = options or LaunchOptions()
        if options.jit not in conf.JIT_MODES:
            raise LaunchError(f"jit={options.jit!r}: use one of {conf.JIT_MODES}")
        if not (site.master_url.startswith(("spark://", "local", "k8s://")) or site.master_url == "yarn"):
            raise LaunchError(f"master URL {site.master_url!r} is not spark://host:port, yarn, k8s://... "
                              "(or local[...])")
        self.site, self.workdir, self.options = site, Path(workdir), options
        self.python = options.python or sys.executable
        self.jobs: list[SparkJob] = []

    @property
    def defaults(self) -> Mapping[str, str]:
        """The conf every job gets under its own (:data:`~.conf.DEFAULT_CONF`)."""
        return dict(conf.DEFAULT_CONF)

    def prepare(self, app: SparkApp) -> SparkJob:
        """Build ``app``'s job without starting it: its directory with the staged files, the conf, the
        environment and the command line. Nothing is made when the deploy mode or Java is wrong."""
        if app.deploy_mode not in ("client", "cluster"):
            raise LaunchError(f"deploy_mode={app.deploy_mode!r}: use 'client' (default) or 'cluster'")
        if app.deploy_mode not in self.site.deploy_modes:
            raise LaunchError(
                f"deploy_mode='cluster' is not possible for {app.script.name}: spark-submit refuses Python "
                f"applications in cluster mode on standalone clusters (SparkSubmit: \"{_SUBMIT_PYTHON_CLUSTER_MSG}\"),"
                " so the master's --supervise driver restart is unavailable. Use deploy_mode='client' (the "
                "default): the driver runs in its own process group here, and job.restart() restarts a killed "
                "driver from the same checkpoint")
        home = conf.spark_home()
        java_env = conf.java_env(self.options.java_home)
        dirs = command.make_dirs(self.workdir, app.name)
        command.stage_files(app.files, dirs.job)
        py_files = command.ship_py_files(app.py_files, dirs.job)
        pythonpath = command.job_pythonpath(app.script)
        effective = self._effective_conf(app, dirs, pythonpath, home, conf.java_path(java_env))
        env = command.child_env(home=home, pythonpath=pythonpath, python=self.python, bind=self.site.driver_host,
                                java_home=self.options.java_home, env=app.env)
        argv = command.submit_argv(home=home, master_url=self.site.master_url, deploy_mode=app.deploy_mode,
                                   name=app.name, script=app.script, effective=effective, py_files=py_files,
                                   files=[f for f in app.files if f.is_file()], args=app.args)
        job = SparkJob(JobCommand(name=app.name, script=app.script, argv=argv, env=env, workdir=dirs.job,
                                  event_log_dir=dirs.event, effective_conf=effective, args=tuple(app.args),
                                  deploy_mode=app.deploy_mode, notes=tuple(app.notes)),
                       host=self.site.host, executors=self.site.executors)
        self.jobs.append(job)
        return job

    def _effective_conf(self, app: SparkApp, dirs: command.JobDirs, pythonpath: str, home: Path,
                        java: str | None) -> dict[str, str]:
        """The Spark conf passed to spark-submit: :data:`~.conf.DEFAULT_CONF`, the job's pinned ports and
        directories, the app's conf; then its jars first in ``spark.jars``, the JVM options, and a UI port
        if the UI was turned on without one."""
        effective = dict(conf.DEFAULT_CONF)
        effective.update(conf.job_conf(name=app.name, driver_host=self.site.driver_host, ports=self.site.host.ports,
                                       event_dir=dirs.event, local_dir=dirs.local, pythonpath=pythonpath,
                                       python=self.python))
        effective.update(app.conf)
        conf.with_jars(effective, app.jars)
        conf.add_java_options(effective, log4j=dirs.log4j, local_dir=dirs.local, home=home, java=java,
                              jit=self.options.jit)
        if effective.get("spark.ui.enabled", "false").lower() == "true" and "spark.ui.port" not in effective:
            effective["spark.ui.port"] = str(self.site.host.ports.free())
        return effective

    def stop_all(self, timeout: float = 30.0) -> None:
        """Stop every job this launcher started. Errors of one job do not keep the others running."""
        stop_jobs(self.jobs, timeout)


def stop_jobs(jobs: Sequence[JobHandle], timeout: float) -> None:
    """Stop every one of ``jobs``; the errors of one do not keep the others running."""
    errors = []
    for job in jobs:
        try:
            job.stop(timeout)
        except Exception as exc:  # keep stopping the rest
            errors.append(f"{job.name}: {exc}")
    if errors:
        raise RuntimeError("could not stop every job: " + "; ".join(errors))
