"""The user's job on YARN: ``spark-submit --master yarn`` in client or cluster deploy mode, what
:meth:`YarnSparkCluster.launcher() <.spark.YarnSparkCluster.launcher>` hands out.

The command, directories and conf are the shared driver machinery's (:mod:`pytest_streamchaos.stack.driver`);
what YARN adds (:func:`yarn_conf`): its conf dir for spark-submit (``HADOOP_CONF_DIR``), two executors
without dynamic allocation (a lost one is replaced, not given up), small ApplicationMasters, one
re-attempt after the AM's loss (``spark.yarn.maxAppAttempts=2``), and a tag (``spark.yarn.tags``) by which
the application is found in YARN's REST API. On the mini cluster Spark's jars and PySpark's archives are
taken from the pyspark wheel as ``local:`` paths (nothing uploaded but the script and the connector).

Client mode: the driver is spark-submit's process here (a :class:`~..driver.job.SparkJob`, killed and
paused by signals as on standalone). Cluster mode: the driver is the ApplicationMaster, in a container;
spark-submit here only waits for the application's end. :class:`YarnJob` wraps either: in cluster mode a
kill is a signal to the AM's container through the RM (YARN's re-attempt is the recovery), and in both
YARN's own events (containers completed with their exit status, attempts) join the job's timeline.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from pytest_streamchaos.errors import LaunchError, StackError
from pytest_streamchaos.events import Kind, StrEnum
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.poll import poll
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.stack.base import Executor, Launch, LaunchOptions, SparkApp
from pytest_streamchaos.stack.driver import command
from pytest_streamchaos.stack.driver.conf import spark_home
from pytest_streamchaos.stack.driver.job import SparkJob, WrapsSparkJob
from pytest_streamchaos.stack.driver.launcher import DriverSite, SubmitLauncher, stop_jobs
from pytest_streamchaos.stack.yarn.faults import YarnAppFaults
from pytest_streamchaos.stack.yarn.rest import AppAttempt, ResourceManagerApi, YarnApiError
from pytest_streamchaos.stack.yarn.watcher import YarnWatcher

DEPLOY_MODES = ("client", "cluster")

#: what a job on YARN gets over the driver defaults: two executors (no dynamic allocation, so a lost one is
#: replaced rather than given up), small ApplicationMasters, one re-attempt after the AM's loss
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

#: a driver in the AM's container binds where YARN runs it: none of the client driver's pinned addresses
_CLIENT_ONLY = ("spark.driver.host", "spark.driver.bindAddress", "spark.driver.port", "spark.driver.blockManager.port")


class YarnTarget(Protocol):
    """What a launcher needs of a YARN: its REST API, and the environment and conf of a submission."""

    @property
    def api(self) -> ResourceManagerApi: ...

    def submit_settings(self, spark_home: Path) -> tuple[dict[str, str], dict[str, str]]: ...


def yarn_conf(app: SparkApp, tag: str, cluster_conf: Mapping[str, str], effective: Mapping[str, str]) -> dict[str, str]:
    """``effective`` (the shared launcher's conf) made a YARN submission's: :data:`YARN_CONF` and the cluster's
    under the job's own conf, the tag; in cluster mode the driver's environment as the AM's
    (``spark.yarn.appMasterEnv.*``) and none of the client driver's addresses."""
    own = dict(app.conf)  # already in ``effective``, completed there (the connector first in spark.jars ...)
    out = {**{k: v for k, v in {**YARN_CONF, **cluster_conf}.items() if k not in own}, **effective,
           "spark.yarn.tags": tag}
    if app.deploy_mode == "cluster":
        for key in _CLIENT_ONLY:
            if key not in own:
                out.pop(key, None)
        am_env = {**app.env, "PYTHONPATH": out.get("spark.executorEnv.PYTHONPATH", "")}
        if "spark.executorEnv.SPARK_LOCAL_IP" in out:
            am_env["SPARK_LOCAL_IP"] = out["spark.executorEnv.SPARK_LOCAL_IP"]
        out.update({f"spark.yarn.appMasterEnv.{k}": v for k, v in am_env.items() if v})
    return out


class YarnLaunches(Protocol):
    """A launcher whose jobs are YARN applications (:class:`YarnSubmitLauncher`, Connect's on YARN): the YARN
    cluster finds executors among its jobs and stops them with it."""

    @property
    def yarn_jobs(self) -> list[YarnJob]: ...

    def stop_all(self, timeout: float = 30.0) -> None: ...


class YarnSubmission:
    """What a submission to ``yarn`` adds to the shared launcher's: YARN's conf dir in spark-submit's environment,
    the cluster's conf and a tag per application (:func:`yarn_conf`). One per launcher, the state of the app being
    prepared; :class:`YarnSubmitLauncher`'s, and the Connect server's on YARN (:mod:`..connect.yarn`)."""

    def __init__(self, yarn: YarnTarget) -> None:
        self.yarn = yarn
        self.tag = ""
        self._cluster_conf: dict[str, str] = {}

    def begin(self, app: SparkApp) -> SparkApp:
        """A new application: its tag, and ``app`` with YARN's submit environment under its own."""
        submit_env, self._cluster_conf = self.yarn.submit_settings(spark_home())
        self.tag = f"streamchaos-{uuid.uuid4().hex[:12]}"  # YARN keeps tags lower-case
        return replace(app, env={**submit_env, **app.env})

    def conf(self, app: SparkApp, effective: Mapping[str, str]) -> dict[str, str]:
        """The shared launcher's ``effective`` conf of ``app`` made this application's (:func:`yarn_conf`)."""
        return yarn_conf(app, self.tag, self._cluster_conf, effective)

    def job(self, inner: SparkJob, executors: Callable[[str], Sequence[Executor]]) -> YarnJob:
        """spark-submit's job of this application as YARN's (:class:`YarnJob`)."""
        return YarnJob(inner, self.yarn.api, self.tag, executors)


class YarnSubmitLauncher(SubmitLauncher):
    """The shared launcher with YARN's conf, its conf dir in spark-submit's environment, and both deploy
    modes; every job a :class:`YarnJob`."""

    def __init__(self, yarn: YarnTarget, site: DriverSite, workdir: str | os.PathLike,
                 options: LaunchOptions | None = None) -> None:
        super().__init__(site, workdir, options)
        self.submission = YarnSubmission(yarn)
        self.yarn_jobs: list[YarnJob] = []

    @property
    def defaults(self) -> Mapping[str, str]:
        return {**super().defaults, **YARN_CONF}

    def prepare(self, app: SparkApp) -> YarnJob:  # type: ignore[override]  # a SparkJob's wrapper
        if app.deploy_mode not in DEPLOY_MODES:
            raise LaunchError(f"deploy_mode={app.deploy_mode!r}: on YARN use 'client' (the driver here) or "
                              "'cluster' (the driver is the ApplicationMaster)")
        job = self.submission.job(super().prepare(self.submission.begin(app)), self.site.executors)
        self.yarn_jobs.append(job)
        return job

    def _effective_conf(self, app: SparkApp, dirs: command.JobDirs, pythonpath: str, home: Path,
                        java: str | None) -> dict[str, str]:
        return self.submission.conf(app, super()._effective_conf(app, dirs, pythonpath, home, java))

    def stop_all(self, timeout: float = 30.0) -> None:
        stop_jobs(self.yarn_jobs, timeout)


class _Timeline:
    """The watcher's recorder: YARN's events into the job's timeline."""

    def __init__(self, events: list[TimelineEvent]) -> None:
        self.events = events

    def record(self, kind: Kind | StrEnum, target: str = "", t: float | None = None, **detail: object) -> TimelineEvent:
        ev = TimelineEvent(time.time() if t is None else t, kind, target, detail)
        self.events.append(ev)
        return ev


class YarnJob(WrapsSparkJob):
    """The user's job on YARN (:class:`~..base.JobHandle`): spark-submit here (``inner``, the driver too in
    client mode) and the application YARN runs, found by its ``tag``."""

    def __init__(self, inner: SparkJob, api: ResourceManagerApi, tag: str,
                 executors: Callable[[str], Sequence[Executor]]) -> None:
        self.inner, self.api, self.tag, self._executors = inner, api, tag, executors
        self.deploy_mode = inner.deploy_mode
        self._events: list[TimelineEvent] = []
        self._watcher: YarnWatcher | None = None
        self._app_id: str | None = None
        self._earlier: set[str] = set()  # the applications of earlier launches (same tag)
        self._killed_attempt: str | None = None

    def __repr__(self) -> str:
        return f"<YarnJob {self.name} {self.deploy_mode} app={self._app_id}>"

    # -- what the handle shares with spark-submit's job (the rest: WrapsSparkJob's) ------------------
    alive = property(lambda self: self.inner.alive)
    returncode = property(lambda self: self.inner.returncode)

    @property
    def launches(self) -> Sequence[Launch]:
        return self.inner.launches

    @property
    def progress(self) -> SparkProgress:
        return self.inner.progress

    @property
    def timeline(self) -> Sequence[TimelineEvent]:
        """spark-submit's launches and kills, and YARN's own events of the application."""
        return sorted([*self.inner.timeline, *self._events], key=lambda e: e.t)

    @property
    def pid(self) -> int | None:
        """The driver's pid here in client mode; None in cluster mode (it runs in the AM's container)."""
        return self.inner.pid if self.deploy_mode == "client" else None

    @property
    def app_id(self) -> str | None:
        """The YARN application id of the current launch (the Spark one too), once the RM has it: every
        launch submits a new application under the job's tag, and the earlier ones are left out."""
        if self._app_id is None:
            try:
                apps = [a for a in self.api.apps(tag=self.tag) if a.id not in self._earlier]
            except YarnApiError:
                return None
            self._app_id = min(apps, key=lambda a: a.started_time).id if apps else None
        return self._app_id

    def faults(self) -> YarnAppFaults:
        """The API faults on this job's application (:class:`LaunchError` before YARN has it)."""
        if self.app_id is None:
            raise LaunchError(f"job {self.name}: YARN has no application tagged {self.tag} (yet)")
        return YarnAppFaults(self.api, self.app_id)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> YarnJob:
        """Submit (a new spark-submit; in cluster mode a new application), and watch YARN's events of it."""
        if self.app_id is not None:  # a new submission is a new application
            self._earlier.add(self.app_id)
            self._app_id = None
        self.inner.start()
        if self._watcher is None:
            self._watcher = YarnWatcher(self.api, _Timeline(self._events), tag=self.tag).start()
        return self

    def restart(self, timeout: float = 30.0) -> YarnJob:
        """Client mode: the driver again, from its checkpoint. Cluster mode: nothing while YARN runs the
        application (its next attempt is the driver's restart); a new submission once it ended."""
        if self.deploy_mode == "cluster" and self.inner.alive:
            return self
        if self.inner.alive:
            self.inner.stop(timeout)
        return self.start()

    def kill(self, timeout: float = 15.0, wait: bool = True) -> None:
        """Client mode: SIGKILL the driver's group here. Cluster mode: the AM's container signalled through
        the RM (``driver_killed`` stamped when YARN accepted it); ``wait``: until that attempt ended."""
        if self.deploy_mode == "client":
            self.inner.kill(timeout, wait)
            return
        faults = self.faults()
        before = faults.attempt()
        kill, _ = faults.kill_am(wait=0)
        self._killed_attempt = before.attempt_id
        self._events.append(TimelineEvent(kill.requested_at, Kind.DRIVER_KILLED, "driver",
                                          {"attempt": before.attempt_id, "container": before.am_container_id,
                                           "via": "YARN FORCEFUL_SHUTDOWN"}))
        if wait:
            self.wait_gone(timeout)

    def wait_gone(self, timeout: float = 15.0) -> None:
        """After a kill: client mode, the driver's group gone; cluster mode, the killed attempt ended (its
        AM's container no longer running) or the application with it."""
        if self.deploy_mode == "client" or self._killed_attempt is None:
            self.inner.wait_gone(timeout)
            return
        attempt = self._killed_attempt
        poll(lambda: self._attempt_over(attempt), timeout, lambda _: TimeoutError(
            f"job {self.name}: YARN attempt {attempt} still running {timeout:.0f}s after its AM was signalled"),
            interval=0.1, clock=time.time)

    def _attempt_over(self, attempt_id: str) -> bool:
        try:
            attempts: list[AppAttempt] = self.api.attempts(self.app_id or "")
        except YarnApiError:
            return False
        current = attempts[-1] if attempts else None
        if current is None or current.attempt_id != attempt_id:
            return True
        try:
            running = {c.id for c in self.api.containers(self.app_id or "", attempt_id)}
        except YarnApiError:
            return False
        return current.am_container_id not in running

    def pause(self, wait: bool = True) -> None:
        self._client_only("pause").pause(wait)

    def wait_paused(self, timeout: float = 5.0) -> None:
        self._client_only("pause").wait_paused(timeout)

    def resume(self) -> None:
        self._client_only("pause").resume()

    def _client_only(self, what: str) -> SparkJob:
        if self.deploy_mode != "client":
            raise StackError(f"{what} of the driver in YARN cluster mode: the driver is the ApplicationMaster in a "
                             "container, and YARN's API can kill a container but not freeze it; use deploy_mode="
                             "'client' (the driver is a process here)")
        return self.inner

    def stop(self, timeout: float = 30.0) -> None:
        """Kill the application through YARN (if it still lives), then stop spark-submit and the watcher."""
        app_id = self.app_id
        try:
            if app_id is not None and self.api.app(app_id).live:
                self.api.kill_app(app_id)
                poll(lambda: not self.api.app(app_id).live, timeout, lambda _: TimeoutError(
                    f"YARN application {app_id} still live {timeout:.0f}s after it was killed"), interval=0.2)
        except YarnApiError:
            pass  # the RM is gone: its NodeManagers' containers die with the cluster
        finally:
            self.inner.stop(timeout)
            if self._watcher is not None:
                self._watcher.stop()
                self._watcher = None

    def tail_log(self, n: int = 40) -> str:
        return self.inner.tail_log(n)

    def last_error(self) -> str | None:
        """What the driver died of, as its log here says (in cluster mode spark-submit's report of the
        application, which carries YARN's diagnostics)."""
        return self.inner.last_error()

    def executors(self) -> list[Executor]:
        """The executors of the application as YARN runs them now (its containers but the AM's)."""
        return [] if self.app_id is None else list(self._executors(self.app_id))

    def wait_for_query_start(self, timeout: float = 120.0) -> None:
        self.inner.wait_for_query_start(timeout)

    def wait_for_batches(self, n: int, timeout: float = 120.0) -> None:
        self.inner.wait_for_batches(n, timeout)
