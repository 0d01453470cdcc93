"""Starts the user's jobs as Spark Connect clients of a server of their own on the standalone cluster: what
:meth:`ConnectSparkCluster.launcher() <.cluster.ConnectSparkCluster.launcher>` hands out.

The server gets what a classic driver would (the shared machinery of :mod:`pytest_streamchaos.stack.driver`:
the job's directory, its pinned ports, event log, Spark's Kafka connector in ``spark.jars``, the job's own conf
and environment) plus the server's address (:func:`~.server.server_conf`) and, on Spark 3.5, the server's jar
from Maven (:func:`~.server.server_jars`). The client is the job's script run by Python in the same directory
with the same environment and ``SPARK_REMOTE``: a script that builds its session with
``SparkSession.builder.getOrCreate()`` becomes a Connect client unchanged, and one that says
``.remote("sc://localhost:15002")`` reaches the same server.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from pytest_streamchaos.errors import LaunchError
from pytest_streamchaos.machine.artifacts import ResolutionError
from pytest_streamchaos.stack.base import LaunchOptions, SparkApp
from pytest_streamchaos.stack.connect import server
from pytest_streamchaos.stack.connect.job import ConnectJob, ServerJob
from pytest_streamchaos.stack.driver import command, conf
from pytest_streamchaos.stack.driver.job import JobCommand, SparkJob
from pytest_streamchaos.stack.driver.launcher import DriverSite, SubmitLauncher

#: the modules of Spark Connect's Python client beyond pyspark's own (pyspark's ``connect`` extra), by distribution
CLIENT_MODULES = {"grpcio": "grpc", "grpcio-status": "grpc_status", "googleapis-common-protos": "google.rpc"}
#: what pyspark 4's client needs besides
CLIENT_MODULES_4 = {"zstandard": "zstandard"}


def client_missing() -> list[str]:
    """The distributions of Connect's client this interpreter lacks (the client runs on it)."""
    import importlib.util

    import pyspark

    modules = {**CLIENT_MODULES, **(CLIENT_MODULES_4 if not pyspark.__version__.startswith("3.") else {})}

    def absent(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is None
        except ModuleNotFoundError:
            return True

    return [dist for dist, module in modules.items() if absent(module)]


class ConnectLauncher(SubmitLauncher):
    """:class:`~pytest_streamchaos.stack.driver.launcher.SubmitLauncher` whose jobs are :class:`ConnectJob` s:
    a server on ``site``'s cluster listening on ``port``, the script its client."""

    def __init__(self, site: DriverSite, workdir: str | os.PathLike, options: LaunchOptions | None = None, *,
                 port: int) -> None:
        super().__init__(site, workdir, options)
        self.port = port
        self.connect_jobs: list[ConnectJob] = []

    def prepare(self, app: SparkApp) -> ConnectJob:  # type: ignore[override]
        """Build ``app``'s server and client without starting them."""
        if app.deploy_mode != "client":
            raise LaunchError(f"deploy_mode={app.deploy_mode!r} on Spark Connect: the Connect server is the query's "
                              "driver and runs here, the script is its client; leave deploy_mode out")
        missing = client_missing()
        if missing:
            raise LaunchError(f"the job's script runs as a Spark Connect client, which needs {', '.join(missing)} in "
                              f"{self.python}: pip install 'pytest-streamchaos[connect]' (pyspark's own 'connect' "
                              "extra)")
        home = conf.spark_home()
        java = conf.java_path(conf.java_env(self.options.java_home))
        try:
            extra = server.server_jars(home, java=java)
        except ResolutionError as exc:
            raise LaunchError(str(exc)) from None
        dirs = command.make_dirs(self.workdir, app.name)
        command.stage_files(app.files, dirs.job)
        py_files = command.ship_py_files(app.py_files, dirs.job)
        pythonpath = command.job_pythonpath(app.script)
        bind = self.site.driver_host
        server_app = replace(app, jars=(*app.jars, *extra), conf={**app.conf, **server.server_conf(self.port, bind)})
        effective = self._effective_conf(server_app, dirs, pythonpath, home, java)
        env = command.child_env(home=home, pythonpath=pythonpath, python=self.python, bind=bind,
                                java_home=self.options.java_home, env=app.env)
        argv = command.submit_argv(home=home, master_url=self.site.master_url, deploy_mode="client",
                                   name=f"{app.name} (Spark Connect server)", script=Path(server.INTERNAL),
                                   effective=effective, py_files=py_files, files=[f for f in app.files if f.is_file()],
                                   args=())
        argv[1:1] = ["--class", server.SERVER_CLASS]
        common = dict(name=app.name, script=app.script, workdir=dirs.job, event_log_dir=dirs.event,
                      effective_conf=effective, args=tuple(app.args))
        server_job = self._server_job(SparkJob(JobCommand(argv=argv, env=env, log_name="connect-server.log",
                                                          role="connect_server", **common),  # type: ignore[arg-type]
                                               host=self.site.host, executors=self.site.executors))
        client_env = {**env, "SPARK_REMOTE": f"sc://{bind}:{self.port}"}
        client = SparkJob(JobCommand(argv=[self.python, str(app.script), *app.args], env=client_env,
                                     notes=tuple(app.notes), **common),  # type: ignore[arg-type]
                          host=self.site.host, executors=self.site.executors)
        job = ConnectJob(server_job, client, host=bind, port=self.port)
        self.connect_jobs.append(job)
        return job

    def _server_job(self, submit: SparkJob) -> ServerJob:
        """The server's handle: its spark-submit as it is (a launcher on another cluster manager wraps it)."""
        return submit

    def stop_all(self, timeout: float = 30.0) -> None:
        from pytest_streamchaos.stack.driver.launcher import stop_jobs

        stop_jobs(self.connect_jobs, timeout)
