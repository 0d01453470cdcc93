"""``spark-submit --master yarn`` of a user's PySpark script, in client or cluster deploy mode, on a YARN
the stack started (:class:`~pytest_streamchaos.stack.yarn.cluster.LocalYarnCluster`) or attached to
(:class:`~pytest_streamchaos.stack.yarn.attach.AttachedYarn`).

    submitter = YarnSubmitter(yarn, tmp_path / "jobs")
    job = submitter.submit("job.py", deploy_mode="cluster", args=[...])
    app = job.wait_for_state("RUNNING", timeout=60)

What the cluster decides (its ``submit_settings``): ``HADOOP_CONF_DIR`` / ``YARN_CONF_DIR``, and on this
machine's mini cluster Spark's jars and PySpark's archives as ``local:`` paths that every NodeManager
here sees, so a submission uploads nothing but the script and Spark's Kafka connector. What the job
gets besides: the launcher's :data:`~pytest_streamchaos.spark.launcher.DEFAULT_CONF` (small executors,
quick failure detection, the event log), two executors, small ApplicationMasters, the Python of this
host, a tag (``spark.yarn.tags``) by which the application is found in YARN's REST API, and
``spark.yarn.maxAppAttempts`` (2: one re-attempt after the AM's loss).

Client mode: the driver is spark-submit's process here, in its own process group; the AM only asks YARN
for executors. Cluster mode: the driver is the ApplicationMaster, in a container; spark-submit only
waits for the application's end. Either way the event log is a file in the job's directory (the
driver runs on this host), and stopping the job kills the application through YARN's API first.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import pytest_streamchaos
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.poll import poll
from pytest_streamchaos.spark import connector
from pytest_streamchaos.spark.launcher import DEFAULT_CONF, QUICK_JIT, LaunchError, spark_home
from pytest_streamchaos.stack.artifacts import ResolutionError
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.stack.yarn.rest import ResourceManagerApi, YarnApiError, YarnApp

DEPLOY_MODES = ("client", "cluster")

#: what a job on YARN gets over :data:`DEFAULT_CONF`: two executors (no dynamic allocation, so a lost one
#: is replaced rather than given up), small ApplicationMasters, one re-attempt after the AM's loss
YARN_CONF: dict[str, str] = {
    "spark.executor.instances": "2",
    "spark.dynamicAllocation.enabled": "false",
    "spark.yarn.am.memory": "512m",  # client mode's AM (it only negotiates containers)
    "spark.yarn.am.cores": "1",
    "spark.driver.memory": "512m",  # cluster mode's AM is the driver
    "spark.yarn.maxAppAttempts": "2",
    "spark.yarn.submit.waitAppCompletion": "true",
    "spark.yarn.report.interval": "1s",
}


class YarnTarget(Protocol):
    """What a submitter needs of a YARN: its REST API, and the environment and conf of a submission."""

    @property
    def api(self) -> ResourceManagerApi: ...

    def submit_settings(self, spark_home: Path) -> tuple[dict[str, str], dict[str, str]]: ...


class YarnJob:
    """One submission: spark-submit's process here (the driver too in client mode) and the YARN
    application it creates, found by its tag."""

    def __init__(self, *, name: str, argv: list[str], env: dict[str, str], workdir: Path, tag: str,
                 deploy_mode: str, api: ResourceManagerApi, effective_conf: dict[str, str]) -> None:
        self.name, self.argv, self.env, self.workdir = name, argv, env, workdir
        self.tag, self.deploy_mode, self.api, self.effective_conf = tag, deploy_mode, api, effective_conf
        self.event_log_dir = workdir / "eventlog"
        self.log_path = workdir / "spark-submit.log"
        self.process: ManagedProcess | None = None
        self.submitted_at: float | None = None
        self._app_id: str | None = None
        self._progress: SparkProgress | None = None

    def __repr__(self) -> str:
        return f"<YarnJob {self.name} {self.deploy_mode} app={self._app_id}>"

    def start(self) -> YarnJob:
        """Run spark-submit (its own process group, in the job's group: in client mode it is the driver)."""
        if self.process is not None and self.process.alive:
            raise LaunchError(f"job {self.name} is already submitted (spark-submit pid {self.process.pid})")
        self.submitted_at = time.time()
        self.process = ManagedProcess(self.argv, env=self.env, log_path=self.log_path, cwd=self.workdir,
                                      name=f"spark-submit:{self.name}", job=True)
        return self

    @property
    def app_id(self) -> str | None:
        """The YARN application id, once the RM has it (found by the job's tag)."""
        if self._app_id is None:
            try:
                apps = self.api.apps(tag=self.tag)
            except YarnApiError:
                return None
            self._app_id = min(apps, key=lambda a: a.started_time).id if apps else None
        return self._app_id

    def app(self) -> YarnApp:
        """The application as the RM reports it now."""
        app_id = self.app_id
        if app_id is None:
            raise LaunchError(f"job {self.name}: YARN has no application tagged {self.tag} (yet)")
        return self.api.app(app_id)

    def wait_for_state(self, *states: str, timeout: float = 120.0) -> YarnApp:
        """Wait until the application is in one of ``states``; fail at once when it ended in another
        one, or when spark-submit exited before YARN had the application."""
        seen: list[Any] = ["no application yet"]

        def reached() -> YarnApp | None:
            if self.app_id is None:
                if self.process is not None and not self.process.alive:
                    raise LaunchError(f"job {self.name}: spark-submit exited with code {self.process.returncode} "
                                      f"before YARN accepted the application:\n{self.tail_log(25)}")
                return None
            app = seen[0] = self.api.app(self.app_id)
            if app.state in states:
                return app
            if not app.live:
                raise LaunchError(f"job {self.name}: application {app.id} ended {app.state}/{app.final_status} while "
                                  f"waiting for {states}: {app.diagnostics[:500]}\n{self.tail_log(25)}")
            return None

        app = poll(reached, timeout, lambda _: TimeoutError(
            f"job {self.name}: not {'/'.join(states)} after {timeout:.0f}s; last seen {seen[0]!r}\n"
            f"{self.tail_log(15)}"),
            interval=0.2)
        assert app is not None  # poll returns only a truthy value
        return app

    @property
    def progress(self) -> SparkProgress:
        """The driver's event log capture (the driver runs on this host in both deploy modes here)."""
        if self._progress is None:
            self._progress = SparkProgress(self.event_log_dir)
        return self._progress

    def tail_log(self, n: int = 40) -> str:
        """The last ``n`` lines of spark-submit's log (the driver's too in client mode)."""
        return self.process.tail_log(n) if self.process is not None else ""

    def stop(self, timeout: float = 30.0) -> None:
        """Kill the application through YARN (if it still lives), then stop spark-submit. Idempotent."""
        app_id = self.app_id
        if app_id is not None:
            try:
                if self.api.app(app_id).live:
                    self.api.kill_app(app_id)
                    poll(lambda: not self.api.app(app_id).live, timeout, lambda _: TimeoutError(
                        f"YARN application {app_id} still live {timeout:.0f}s after it was killed"), interval=0.2)
            except YarnApiError:
                pass  # the RM is gone: its NodeManagers' containers die with the cluster
        if self.process is not None:
            self.process.terminate(timeout)


class YarnSubmitter:
    """Builds and starts :class:`YarnJob` s on one YARN (see the module docstring)."""

    def __init__(self, yarn: YarnTarget, workdir: str | os.PathLike, *, conf: Mapping[str, Any] | None = None,
                 python: str | None = None, java_home: str | None = None) -> None:
        self.yarn, self.workdir = yarn, Path(workdir)
        self.conf = {k: str(v) for k, v in (conf or {}).items()}
        self.python, self.java_home = python or sys.executable, java_home
        self.jobs: list[YarnJob] = []

    def submit(self, script: str | os.PathLike, **kwargs: Any) -> YarnJob:
        """:meth:`prepare` and start."""
        return self.prepare(script, **kwargs).start()

    def prepare(self, script: str | os.PathLike, *, deploy_mode: str = "client", conf: Mapping[str, Any] | None = None,
                env: Mapping[str, str] | None = None, args: Sequence[str] = (), name: str | None = None) -> YarnJob:
        """Check everything and build the job without starting it. ``env``: the driver's environment
        (in cluster mode passed on as ``spark.yarn.appMasterEnv.*``)."""
        script_path = Path(script).resolve()
        if not script_path.is_file() or script_path.suffix != ".py":
            raise LaunchError(f"job script {script_path} is not an existing .py file; pass your PySpark script")
        if deploy_mode not in DEPLOY_MODES:
            raise LaunchError(f"deploy_mode={deploy_mode!r}: on YARN use 'client' (the driver here) or 'cluster' "
                              "(the driver is the ApplicationMaster)")
        home = spark_home()
        try:
            jars = connector.connector_jars(home, java=self._java())
        except ResolutionError as exc:
            raise LaunchError(str(exc)) from None
        name = name or script_path.stem
        workdir = self._job_dir(name)
        tag = f"streamchaos-{uuid.uuid4().hex[:12]}"  # YARN keeps tags lower-case
        submit_env, cluster_conf = self.yarn.submit_settings(home)
        effective = self._conf(name, workdir, tag, jars, cluster_conf, conf or {}, env or {}, deploy_mode)
        argv = [str(home / "bin" / "spark-submit"), "--master", "yarn", "--deploy-mode", deploy_mode, "--name", name]
        argv += [a for k, v in effective.items() for a in ("--conf", f"{k}={v}")]
        argv += [str(script_path), *map(str, args)]
        job = YarnJob(name=name, argv=argv, env=self._env(home, script_path, submit_env, env or {}), workdir=workdir,
                      tag=tag, deploy_mode=deploy_mode, api=self.yarn.api, effective_conf=effective)
        self.jobs.append(job)
        return job

    def stop_all(self, timeout: float = 30.0) -> None:
        """Stop every job this submitter started (errors of one do not keep the others running)."""
        errors = []
        for job in self.jobs:
            try:
                job.stop(timeout)
            except Exception as exc:  # keep stopping the rest
                errors.append(f"{job.name}: {exc}")
        if errors:
            raise RuntimeError("could not stop every job: " + "; ".join(errors))

    def _conf(self, name: str, workdir: Path, tag: str, jars: Sequence[Path], cluster_conf: Mapping[str, str],
              conf: Mapping[str, Any], env: Mapping[str, str], deploy_mode: str) -> dict[str, str]:
        """DEFAULT_CONF, YARN_CONF, the cluster's, this job's own, the submitter's conf, the call's conf."""
        (workdir / "eventlog").mkdir(parents=True)
        effective = {**DEFAULT_CONF, **YARN_CONF, **cluster_conf, "spark.app.name": name, "spark.yarn.tags": tag,
                     "spark.eventLog.dir": (workdir / "eventlog").as_uri(), "spark.pyspark.python": self.python,
                     "spark.pyspark.driver.python": self.python,
                     # the driver's and executors' JVMs as on the standalone cluster: C1 only
                     "spark.driver.extraJavaOptions": QUICK_JIT, "spark.executor.extraJavaOptions": QUICK_JIT,
                     "spark.yarn.am.extraJavaOptions": QUICK_JIT}
        if deploy_mode == "cluster":
            effective.update({f"spark.yarn.appMasterEnv.{k}": v for k, v in env.items()})
        effective.update(self.conf)
        effective.update({k: str(v) for k, v in conf.items()})
        effective["spark.jars"] = ",".join(p for p in (*map(str, jars), effective.get("spark.jars", "")) if p)
        return effective

    def _env(self, home: Path, script: Path, submit_env: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
        """spark-submit's environment: ours without Spark settings that would override the job's, plus the
        cluster's, Python's (this package and the script's folder importable everywhere) and the job's."""
        child = {k: v for k, v in os.environ.items()
                 if k not in ("PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR")}
        package_root = str(Path(pytest_streamchaos.__file__).resolve().parents[1])
        child.update({"SPARK_HOME": str(home), "PYSPARK_PYTHON": self.python, "PYSPARK_DRIVER_PYTHON": self.python,
                      "PYTHONPATH": os.pathsep.join(dict.fromkeys([package_root, str(script.parent)])),
                      "SPARK_LAUNCHER_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC", "PYTHONUNBUFFERED": "1"})
        if self.java_home:
            child["JAVA_HOME"] = self.java_home
        child.update(submit_env)
        child.update({k: str(v) for k, v in env.items()})
        return child

    def _java(self) -> str | None:
        home = self.java_home or os.environ.get("JAVA_HOME")
        return str(Path(home) / "bin" / "java") if home else None

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
